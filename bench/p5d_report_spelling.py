"""P5(d): a big report of doubles as clients print them, stored by PostgreSQL from its rows
or from its text.

    .venv/bin/python bench/p5d_report_spelling.py [--reports 24] [--rows 1000] [--out FILE.jsonl]

P5a's bodies spell every value with six decimals; a Keras callback's report spells each
float32 value as Python prints a double, mostly 16 or 17 digits (``0.6931471824645996``).
Each repetition builds one such ``{"rows": [...]}`` body (three metrics a row) and stores it
in a fresh PostgreSQL database, in its own write transaction, with what the master's bulk
writer runs: the API's fast schema (:func:`pedl.master.api.trials.fast_metric_rows`), the text
check (:func:`pedl.db.metrics.report_text`) and :func:`pedl.db.metrics.upsert_reports`, once
with the rows and once with the text, alternately first. Prints one JSON line: rows/s of each
(median and range, the first two repetitions left out as warm-up), whether the text check
took the body, the machine and the load average before and after.
"""

from __future__ import annotations

import argparse
import json
import statistics
import sys
import tempfile
import time
from pathlib import Path

sys.path.insert(0, str(Path.cwd()))  # the checkout run from: its pedl, before the installed one

import _env
import numpy as np
import p5_master

from pedl.db import Database
from pedl.db import metrics as metrics_repo
from pedl.master.api.trials import fast_metric_rows

WARM_UP = 2


def _body(rng: np.random.Generator, first_batch: int, count: int) -> bytes:
    """``count`` training rows from ``first_batch`` on, their values float32 numbers printed
    as Python prints the doubles a Keras callback reports."""
    rows = [
        {
            "kind": "training",
            "total_batches": first_batch + i,
            "metrics": {
                "loss": float(np.float32(rng.random())),
                "accuracy": float(np.float32(rng.random())),
                "learning_rate": float(np.float32(1e-3)),
            },
        }
        for i in range(count)
    ]
    return json.dumps({"rows": rows}).encode()


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--reports", type=int, default=24)
    parser.add_argument("--rows", type=int, default=1000)
    parser.add_argument("--out", type=Path)
    args = parser.parse_args()
    backend = p5_master.make_backend("postgresql", Path(tempfile.mkdtemp(prefix="p5d-")))
    database = Database(backend.url)
    rng = np.random.default_rng(0)
    rates: dict[str, list[float]] = {"rows": [], "text": []}
    taken = []
    try:
        database.upgrade()
        trial_id = p5_master.make_trial(database)
        before = _env.load_average()
        batch = 1
        for repetition in range(args.reports):
            order = ("rows", "text") if repetition % 2 == 0 else ("text", "rows")
            for form in order:
                body = _body(rng, batch, args.rows)
                batch += args.rows
                start = time.perf_counter()
                rows = fast_metric_rows(body)
                assert rows is not None
                text = metrics_repo.report_text(body, rows, "postgresql")
                taken.append(text is not None)
                with database.session(write=True) as session:
                    metrics_repo.upsert_reports(
                        session, [(trial_id, text if form == "text" and text else rows)]
                    )
                rates[form].append(args.rows / (time.perf_counter() - start))
        result = {
            "bench": "p5d_report_spelling",
            "backend": "postgresql",
            "rows_per_report": args.rows,
            "reports": args.reports,
            "text_check_takes_the_body": all(taken),
            **{
                f"{form}_rows_per_s_median": round(statistics.median(values[WARM_UP:]))
                for form, values in rates.items()
            },
            **{
                f"{form}_rows_per_s_range": [
                    round(min(values[WARM_UP:])),
                    round(max(values[WARM_UP:])),
                ]
                for form, values in rates.items()
            },
            "load_before": before,
            "load_after": _env.load_average(),
            "machine": _env.machine(),
        }
        _env.emit(result, args.out)
    finally:
        database.dispose()
        backend.drop()


if __name__ == "__main__":
    main()
