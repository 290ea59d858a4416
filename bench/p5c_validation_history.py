"""P5(c): the database layer's cost of one validation report late in a long trial.

    .venv/bin/python bench/p5c_validation_history.py --backend sqlite|postgresql \\
        [--sizes 1000,5000,20000] [--reports 20] [--out FILE.jsonl]

Every stored validation row is kept and every checkpoint a trial took keeps its row (retention
deletes the files), so a trial that validates and checkpoints often carries thousands of both.
For each size N, a trial of a fresh database gets N validation rows and N checkpoint rows
(written directly, DELETED as retention leaves them), then ``--reports`` one-row validation
reports through :func:`pedl.db.metrics.upsert_metrics` (what the master's metric writer runs
for a report: the rows, the trial's progress, its best validation and best checkpoint), each
in its own write transaction. Prints one JSON line per size: the median and the range of the
milliseconds per report, the machine and the load average before and after. Run it from the
checkout to measure (its ``pedl`` is the one imported): side by side with a worktree of another
commit, under the same load, the figures compare.
"""

from __future__ import annotations

import argparse
import statistics
import sys
import tempfile
import time
import uuid
from pathlib import Path

sys.path.insert(0, str(Path.cwd()))  # the checkout run from: its pedl, before the installed one

import _env
import p5_master

from pedl.db import (
    Checkpoint,
    Database,
    MetricRow,
    metrics,
)
from pedl.db._types import utcnow
from pedl.vocabulary import CheckpointState, MetricKind


def _history(database: Database, trial_id: int, first: int, last: int) -> None:
    """Validation rows and DELETED checkpoint rows at batch counts ``first``..``last``."""
    with database.session(write=True) as session:
        metrics.upsert_metrics(
            session,
            trial_id,
            [
                MetricRow(
                    kind=MetricKind.VALIDATION,
                    total_batches=b,
                    metrics={"loss": 1.0 / b, "accuracy": 0.5, "val_extra": 0.1},
                )
                for b in range(first, last + 1)
            ],
        )
        for b in range(first, last + 1):
            session.add(
                Checkpoint(
                    uuid=str(uuid.uuid4()),
                    trial_id=trial_id,
                    total_batches=b,
                    state=CheckpointState.DELETED,
                    metadata_={},
                    resources={},
                    created_at=utcnow(),
                    searcher_metric=1.0 / b,
                )
            )


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--backend", choices=["sqlite", "postgresql"], default="sqlite")
    parser.add_argument("--sizes", default="1000,5000,20000")
    parser.add_argument("--reports", type=int, default=20)
    parser.add_argument("--out", type=Path)
    args = parser.parse_args()
    backend = p5_master.make_backend(args.backend, Path(tempfile.mkdtemp(prefix="p5c-")))
    database = Database(backend.url)
    try:
        database.upgrade()
        trial_id = p5_master.make_trial(database)
        done = 0
        for size in (int(s) for s in args.sizes.split(",")):
            _history(database, trial_id, done + 1, size)
            done = size
            before = _env.load_average()
            millis = []
            for _ in range(args.reports):
                done += 1
                row = MetricRow(
                    kind=MetricKind.VALIDATION, total_batches=done, metrics={"loss": 0.5}
                )
                start = time.perf_counter()
                with database.session(write=True) as session:
                    metrics.upsert_metrics(session, trial_id, [row])
                millis.append((time.perf_counter() - start) * 1000)
            result = {
                "bench": "p5c_validation_history",
                "backend": args.backend,
                "history": size,
                "reports": args.reports,
                "ms_per_report_median": round(statistics.median(millis), 2),
                "ms_per_report_range": [round(min(millis), 2), round(max(millis), 2)],
                "load_before": before,
                "load_after": _env.load_average(),
                "machine": _env.machine(),
                "pedl": str(Path(sys.modules["pedl"].__file__ or "").parent),
            }
            _env.emit(result, args.out)
    finally:
        database.dispose()
        backend.drop()


if __name__ == "__main__":
    main()
