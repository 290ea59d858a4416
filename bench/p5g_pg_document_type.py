"""P5(g): PostgreSQL's server CPU per stored metric row, by the type of the row's document.

    .venv/bin/python bench/p5g_pg_document_type.py [--rounds 3] [--bodies 60] [--out F.jsonl]

P5a on PostgreSQL is bound by its server's CPU (bench/RESULTS.md). This stores P5a's bodies
(1,000 training rows, two metrics each) in a scratch database with the metric writer's text
statement (``json_to_recordset`` of the body, ``INSERT ... ON CONFLICT DO UPDATE``), one
transaction per body, into tables that differ only in the document column's type and the
row's identity:

- ``current``: the ``metrics`` table's shape (a ``bigserial`` primary key and the unique
  ``(trial_id, kind, total_batches)``);
- ``no_id``: no ``id``, ``(trial_id, kind, total_batches)`` the primary key;
- ``id_unindexed``: ``id`` from its sequence but no index on it;

each with the document as ``jsonb`` and as ``json``, the variants in turn within each round.
Reads the server process's CPU from ``/proc`` (the database must be local). Prints one JSON
line per round and variant (server µs per row, rows/s) and a summary of medians.
"""

from __future__ import annotations

import argparse
import statistics
import sys
import time
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path.cwd()))  # the checkout run from: its pedl, before the installed one

import _env
import p5_master
import psycopg

SCRATCH = "pedl_p5g_scratch"
_KEY = "trial_id integer NOT NULL, kind metric_kind NOT NULL, total_batches bigint NOT NULL"
_REST = """total_records bigint, total_epochs double precision, metrics {doc} NOT NULL,
    reported_at timestamptz NOT NULL"""
SHAPES = {
    "current": f"id bigserial PRIMARY KEY, {_KEY}, {_REST}, UNIQUE (trial_id, kind, total_batches)",
    "no_id": f"{_KEY}, {_REST}, PRIMARY KEY (trial_id, kind, total_batches)",
    "id_unindexed": f"id bigserial, {_KEY}, {_REST}, UNIQUE (trial_id, kind, total_batches)",
}
STATEMENT = """
INSERT INTO {table} (trial_id, kind, total_batches, total_records, total_epochs, metrics,
                     reported_at)
SELECT %(trial)s, CAST(r.kind AS metric_kind), r.total_batches, r.total_records,
       r.total_epochs, r.metrics, CAST(%(now)s AS timestamptz)
FROM json_to_recordset(CAST(%(body)s AS json) -> 'rows') AS r(
    kind text, total_batches bigint, total_records bigint, total_epochs double precision,
    metrics {doc})
ON CONFLICT (trial_id, kind, total_batches) DO UPDATE SET
    metrics = excluded.metrics, total_records = excluded.total_records,
    total_epochs = excluded.total_epochs, reported_at = excluded.reported_at
"""


def server_cpu_s(pid: int) -> float:
    fields = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()
    return (int(fields[11]) + int(fields[12])) / 100


def run_variant(
    conn: psycopg.Connection[Any], pid: int, shape: str, doc: str, bodies: list[str]
) -> dict[str, Any]:
    table = f"m_{shape}_{doc}"
    conn.execute(f"DROP TABLE IF EXISTS {table}")
    conn.execute(f"CREATE TABLE {table} ({SHAPES[shape].format(doc=doc)})")
    statement = STATEMENT.format(table=table, doc=doc)
    cpu_before = server_cpu_s(pid)
    start = time.perf_counter()
    for index, body in enumerate(bodies):
        with conn.transaction():
            conn.execute(
                statement, {"trial": index % 4 + 1, "body": body, "now": "2026-12-03T00:00:00Z"}
            )
    wall = time.perf_counter() - start
    cpu = server_cpu_s(pid) - cpu_before
    rows = 1000 * len(bodies)
    conn.execute(f"DROP TABLE {table}")
    return {
        "shape": shape,
        "document": doc,
        "server_us_per_row": round(cpu / rows * 1e6, 2),
        "rows_per_s": round(rows / wall),
    }


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--rounds", type=int, default=3)
    parser.add_argument("--bodies", type=int, default=60, help="1,000-row bodies per variant")
    parser.add_argument("--out", type=Path)
    args = parser.parse_args()

    with psycopg.connect(p5_master.PG_ADMIN_DSN, autocommit=True) as admin:
        admin.execute(f'DROP DATABASE IF EXISTS "{SCRATCH}" WITH (FORCE)')
        admin.execute(f'CREATE DATABASE "{SCRATCH}"')
    results: list[dict[str, Any]] = []
    try:
        dsn = p5_master.PG_ADMIN_DSN.replace("dbname=test", f"dbname={SCRATCH}")
        with psycopg.connect(dsn, autocommit=True) as conn:
            conn.execute("CREATE TYPE metric_kind AS ENUM ('training', 'validation')")
            pid = conn.execute("SELECT pg_backend_pid()").fetchone()[0]  # type: ignore[index]
            for round_ in range(args.rounds):
                bodies = [
                    p5_master.rows_body(
                        (round_ * args.bodies + i) * 1000, 1000, seed=i % 4 + 1
                    ).decode()
                    for i in range(args.bodies)
                ]
                for doc in ("jsonb", "json"):
                    for shape in SHAPES:
                        load_before = _env.load_average()
                        row = run_variant(conn, pid, shape, doc, bodies)
                        row.update(
                            bench="p5g",
                            round=round_,
                            loadavg_before=load_before,
                            loadavg_after=_env.load_average(),
                        )
                        results.append(row)
                        _env.emit(row, args.out)
    finally:
        with psycopg.connect(p5_master.PG_ADMIN_DSN, autocommit=True) as admin:
            admin.execute(f'DROP DATABASE IF EXISTS "{SCRATCH}" WITH (FORCE)')
    summary: dict[str, Any] = {"summary": "p5g", "rounds": args.rounds, "bodies": args.bodies}
    for doc in ("jsonb", "json"):
        for shape in SHAPES:
            mine = [r for r in results if r["shape"] == shape and r["document"] == doc]
            summary[f"{shape}_{doc}"] = {
                "server_us_per_row": statistics.median(r["server_us_per_row"] for r in mine),
                "rows_per_s": statistics.median(r["rows_per_s"] for r in mine),
            }
    summary["machine"] = _env.machine()
    _env.emit(summary, args.out)


if __name__ == "__main__":
    main()
