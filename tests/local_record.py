"""Reading a local run's record (the master's schema on ``experiment.db``) in tests."""

from __future__ import annotations

from pathlib import Path
from typing import Any

from pedl.db import Database, Trial
from pedl.db import checkpoints as checkpoints_repo
from pedl.db import experiments as experiments_repo
from pedl.db import metrics as metrics_repo
from pedl.db import trials as trials_repo
from pedl.vocabulary import CheckpointState, MetricKind


def _database(directory: Path) -> Database:
    return Database(f"sqlite:///{directory / 'experiment.db'}")


def trials(directory: Path) -> list[Trial]:
    """The run's trials, oldest first."""
    database = _database(directory)
    try:
        with database.session() as session:
            (experiment,), _ = experiments_repo.list_experiments(session, limit=1)
            return trials_repo.all_trials(session, experiment.id)
    finally:
        database.dispose()


def metric_rows(
    directory: Path, trial_id: int, kind: MetricKind | None = None
) -> list[tuple[str, int, dict[str, Any]]]:
    """``(kind, total_batches, metrics)`` of a trial's rows, by kind then batches."""
    database = _database(directory)
    try:
        with database.session() as session:
            rows = metrics_repo.list_metrics(session, trial_id, kind=kind)
            return [(str(r.kind), r.total_batches, dict(r.metrics)) for r in rows]
    finally:
        database.dispose()


def metric_epochs(
    directory: Path, trial_id: int, kind: MetricKind
) -> list[tuple[int, float | None]]:
    """``(total_batches, total_epochs)`` of a trial's ``kind`` rows, by batches."""
    database = _database(directory)
    try:
        with database.session() as session:
            rows = metrics_repo.list_metrics(session, trial_id, kind=kind)
            return [(r.total_batches, r.total_epochs) for r in rows]
    finally:
        database.dispose()


def checkpoint_batches(
    directory: Path, state: CheckpointState = CheckpointState.COMPLETED
) -> list[int]:
    """The batch counts of the run's checkpoints in ``state``, oldest first."""
    database = _database(directory)
    try:
        with database.session() as session:
            rows, _ = checkpoints_repo.list_checkpoints(session, states=[state], limit=1000)
            return [c.total_batches for c, _ in rows]
    finally:
        database.dispose()
