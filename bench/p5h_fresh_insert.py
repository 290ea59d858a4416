"""P5(h): the metric writer's text statement as a plain INSERT (``fresh``) against the upsert.

    .venv/bin/python bench/p5h_fresh_insert.py --backend sqlite|postgresql [--blocks 40]
        [--out F.jsonl]

The database layer alone, in one thread, as P5a's DB layer (text) runs it: P5a's bodies
(1,000 training rows, two metrics each, 4 trials taking turns, each body new keys) checked by
``report_text`` and stored by ``upsert_reports``, one transaction per body, with ``fresh``
(the writer's first try: a plain ``INSERT``) and without (``INSERT ... ON CONFLICT DO
UPDATE``), in blocks of 20 bodies alternating (the order swapped every block), on one fresh
database. Prints one JSON line: each form's median rows/s over its blocks, how many blocks
the plain insert was faster in, the load and the machine.
"""

from __future__ import annotations

import argparse
import statistics
import sys
import tempfile
import time
from pathlib import Path

sys.path.insert(0, str(Path.cwd()))  # the checkout run from: its pedl, before the installed one

import _env
import p5_master

from pedl.db import Database
from pedl.db import metrics as metrics_repo
from pedl.master.api.trials import fast_metric_rows


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--backend", choices=["sqlite", "postgresql"], default="sqlite")
    parser.add_argument("--blocks", type=int, default=40, help="blocks of 20 bodies per form")
    parser.add_argument("--out", type=Path)
    args = parser.parse_args()

    backend = p5_master.make_backend(args.backend, Path(tempfile.mkdtemp(prefix="pedl-p5h-")))
    database = Database(backend.url)
    try:
        database.upgrade()
        trials = [p5_master.make_trial(database) for _ in range(4)]
        rates: dict[bool, list[float]] = {False: [], True: []}
        first = 0
        load_before = _env.load_average()
        for block in range(args.blocks):
            for fresh in (True, False) if block % 2 else (False, True):
                bodies = []
                for r in range(5):
                    for trial_id in trials:
                        body = p5_master.rows_body(first + r * 1000, 1000, seed=trial_id)
                        rows = fast_metric_rows(body)
                        assert rows is not None
                        bodies.append((trial_id, body, rows))
                first += 5000
                start = time.perf_counter()
                for trial_id, body, rows in bodies:
                    report = metrics_repo.report_text(body, rows, database.dialect)
                    assert report is not None, "the benchmark's bodies are stored from their text"
                    with database.session(write=True, serialize=True) as session:
                        metrics_repo.upsert_reports(session, [(trial_id, report)], fresh=fresh)
                rates[fresh].append(1000 * len(bodies) / (time.perf_counter() - start))
        result = {
            "bench": "p5h",
            "backend": args.backend,
            "blocks": args.blocks,
            "upsert_rows_per_s": round(statistics.median(rates[False])),
            "plain_insert_rows_per_s": round(statistics.median(rates[True])),
            "plain_faster_blocks": sum(
                p > u for p, u in zip(rates[True], rates[False], strict=True)
            ),
            "loadavg_before": load_before,
            "loadavg_after": _env.load_average(),
            "machine": _env.machine(),
        }
    finally:
        database.dispose()
        backend.drop()
    _env.emit(result, args.out)


if __name__ == "__main__":
    main()
