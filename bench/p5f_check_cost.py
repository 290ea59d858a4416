"""P5(f): what checking a 1,000-row report costs, by the API's schema or by SQLite's JSON.

    .venv/bin/python bench/p5f_check_cost.py [--calls 30] [--out FILE.jsonl]

P5a's SQLite ratio is bound by the machine's CPU, of which checking each report (in a read
process) is the largest share beside the writer's (bench/RESULTS.md, "P5a, 2026-12-02 17:40").
This times, in one thread, on one of P5a's bodies (1,000 training rows, two metrics each):

- ``schema_ms``: :func:`pedl.master.api.trials.fast_metric_rows` (pydantic's core);
- ``text_check_ms``: :func:`pedl.db.metrics.report_text` on its rows (bytes counted);
- ``sqlite_check_ms``: what SQLite's JSON functions take to check the same (each row an
  object of known keys, its kind, its batch count an integer ≥ 0, each metric a number within
  ±1e300 or null under a name of 1 to 256 characters: less than the schema checks, so a lower
  bound), for the writer's own statement to check the happy path instead;
- ``sqlite_rows_ms``: SQLite only walking the rows (``json_each``), for scale.

Prints one JSON line (medians of ``--calls`` calls each, the SQLite version, the machine).
"""

from __future__ import annotations

import argparse
import sqlite3
import statistics
import sys
import time
from collections.abc import Callable
from pathlib import Path

sys.path.insert(0, str(Path.cwd()))  # the checkout run from: its pedl, before the installed one

import _env
import p5_master

from pedl.db.metrics import report_text
from pedl.master.api.trials import fast_metric_rows

SQLITE_CHECK = """
SELECT count(*), sum(
    json_type(value) = 'object'
    AND json_extract(value, '$.kind') IN ('training', 'validation')
    AND json_type(value, '$.total_batches') = 'integer'
    AND json_extract(value, '$.total_batches') >= 0
    AND json_type(value, '$.metrics') = 'object'
    AND NOT EXISTS (
        SELECT 1 FROM json_each(value) AS field WHERE field.key NOT IN
        ('kind', 'total_batches', 'total_records', 'total_epochs', 'metrics', 'reported_at')
    )
    AND NOT EXISTS (
        SELECT 1 FROM json_each(value, '$.metrics') AS metric
        WHERE metric.type NOT IN ('real', 'integer', 'null') OR abs(metric.value) > 1e300
            OR length(metric.key) NOT BETWEEN 1 AND 256
    )
)
FROM json_each(?, '$.rows')
"""


def median_ms(call: Callable[[], object], calls: int) -> float:
    times = []
    for _ in range(calls):
        start = time.perf_counter()
        call()
        times.append(time.perf_counter() - start)
    return round(statistics.median(times) * 1000, 3)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--calls", type=int, default=30)
    parser.add_argument("--out", type=Path)
    args = parser.parse_args()

    body = p5_master.rows_body(0, 1000, seed=1)
    text = body.decode()
    rows = fast_metric_rows(body)
    assert rows is not None and report_text(body, rows, "sqlite") is not None
    connection = sqlite3.connect(":memory:")
    checked = connection.execute(SQLITE_CHECK, (text,)).fetchone()
    assert checked == (1000, 1000), f"SQLite's check does not pass P5a's body: {checked}"
    load_before = _env.load_average()
    result = {
        "bench": "p5f",
        "rows": len(rows),
        "schema_ms": median_ms(lambda: fast_metric_rows(body), args.calls),
        "text_check_ms": median_ms(lambda: report_text(body, rows, "sqlite"), args.calls),
        "sqlite_check_ms": median_ms(
            lambda: connection.execute(SQLITE_CHECK, (text,)).fetchone(), args.calls
        ),
        "sqlite_rows_ms": median_ms(
            lambda: connection.execute(
                "SELECT count(*) FROM json_each(?, '$.rows')", (text,)
            ).fetchone(),
            args.calls,
        ),
        "sqlite": sqlite3.sqlite_version,
        "loadavg_before": load_before,
        "loadavg_after": _env.load_average(),
        "machine": _env.machine(),
    }
    _env.emit(result, args.out)


if __name__ == "__main__":
    main()
