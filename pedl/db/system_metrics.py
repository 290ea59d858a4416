"""Trials' system metrics: idempotent inserts of samples, and downsampled reads."""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from datetime import datetime
from typing import Any

from sqlalchemy import Table, func, select
from sqlalchemy.orm import Session

from pedl.db._system_models import SystemMetric
from pedl.db._upsert import dialect_insert


@dataclass(frozen=True)
class SystemSample:
    """One sample of one worker of a trial: when it was taken and its values."""

    rank: int
    sampled_at: datetime
    metrics: dict[str, Any]


def insert_samples(session: Session, trial_id: int, samples: Sequence[SystemSample]) -> int:
    """Insert the samples not stored before (same rank and time: ``ON CONFLICT DO NOTHING``,
    so a re-sent batch stores nothing twice); return how many were new."""
    if not samples:
        return 0
    unique: dict[tuple[int, datetime], dict[str, Any]] = {}
    for sample in samples:
        unique.setdefault(
            (sample.rank, sample.sampled_at),
            {
                "trial_id": trial_id,
                "rank": sample.rank,
                "sampled_at": sample.sampled_at,
                "metrics": sample.metrics,
            },
        )
    table = SystemMetric.__table__
    assert isinstance(table, Table)
    statement = (
        dialect_insert(session, table)
        .on_conflict_do_nothing(index_elements=[table.c.trial_id, table.c.rank, table.c.sampled_at])
        .returning(table.c.id)
    )
    return len(session.execute(statement, list(unique.values())).all())


def count_samples(session: Session, trial_id: int, *, rank: int | None = None) -> int:
    """How many samples the trial's workers (or worker ``rank``) stored."""
    query = select(func.count()).select_from(SystemMetric).where(SystemMetric.trial_id == trial_id)
    if rank is not None:
        query = query.where(SystemMetric.rank == rank)
    return int(session.execute(query).scalar_one())


def read_samples(
    session: Session, trial_id: int, *, max_points: int, rank: int | None = None
) -> list[SystemSample]:
    """The trial's samples ordered by rank, then time; of each worker (or of worker ``rank``)
    at most ``max_points``, evenly spread over its samples (the first always) when it has
    more: the database picks them (a window over each worker's samples), so a long trial's
    read stays bounded."""
    if max_points < 1:
        raise ValueError(f"max_points must be at least 1, got {max_points}")
    position = (
        func.row_number()
        .over(partition_by=SystemMetric.rank, order_by=SystemMetric.sampled_at)
        .label("position")
    )
    total = func.count().over(partition_by=SystemMetric.rank).label("total")
    inner = select(
        SystemMetric.rank, SystemMetric.sampled_at, SystemMetric.metrics, position, total
    ).where(SystemMetric.trial_id == trial_id)
    if rank is not None:
        inner = inner.where(SystemMetric.rank == rank)
    numbered = inner.subquery()
    # Keep the first sample of each of max_points equal buckets: k = position - 1 opens a new
    # bucket when floor(k * max_points / total) grows, i.e. when (k * max_points) % total is
    # below max_points (every sample when total <= max_points).
    query = (
        select(numbered.c.rank, numbered.c.sampled_at, numbered.c.metrics)
        .where(((numbered.c.position - 1) * max_points) % numbered.c.total < max_points)
        .order_by(numbered.c.rank, numbered.c.sampled_at)
    )
    return [
        SystemSample(rank=row.rank, sampled_at=row.sampled_at, metrics=dict(row.metrics))
        for row in session.execute(query)
    ]
