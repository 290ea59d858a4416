"""Ingesting and reading training/validation metrics (idempotent, batched upserts)."""

from __future__ import annotations

import json
import math
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field
from datetime import datetime
from typing import Any

from sqlalchemy import TextClause, select, text, update
from sqlalchemy.orm import Session

from pedl.engine import MetricKind
from pedl.master.db import trials as trials_repo
from pedl.master.db._models import Metric, Trial
from pedl.master.db._types import as_utc, utcnow


@dataclass(frozen=True)
class MetricRow:
    """One reported row. ``(trial, kind, total_batches)`` is its identity."""

    kind: MetricKind
    total_batches: int
    metrics: Mapping[str, Any]
    total_records: int | None = None
    total_epochs: float | None = None
    reported_at: datetime | None = field(default=None)


def upsert_metrics(session: Session, trial_id: int, rows: Sequence[MetricRow]) -> int:
    """Store ``rows`` for a trial with one ``INSERT ... ON CONFLICT DO UPDATE`` statement.

    Re-sending a row with the same ``(kind, total_batches)`` replaces it, so a trial that
    re-reports after a resume never loses or doubles a row. Within one call the last row
    for a key wins. Non-finite float values are stored as the strings ``"NaN"``,
    ``"Infinity"`` and ``"-Infinity"`` (JSON has no literal for them). Also advances the
    trial's ``total_batches`` (training rows) and refreshes its best validation/checkpoint
    (validation rows). Returns the number of distinct keys written. The trial must exist
    (the caller checks; a missing one violates the foreign key).
    """
    if not rows:
        return 0
    dialect = session.get_bind().dialect.name
    statement, stamp = _UPSERTS[dialect]
    now = stamp(utcnow())
    latest: dict[tuple[MetricKind, int], dict[str, Any]] = {}
    for row in rows:
        latest[(row.kind, row.total_batches)] = {
            "kind": MetricKind(row.kind).value,
            "total_batches": row.total_batches,
            "total_records": row.total_records,
            "total_epochs": row.total_epochs,
            "metrics": {name: _json_safe(value) for name, value in row.metrics.items()},
            "reported_at": now if row.reported_at is None else stamp(row.reported_at),
        }
    session.execute(statement, {"trial_id": trial_id, "rows": json.dumps(list(latest.values()))})

    training = [batches for kind, batches in latest if kind == MetricKind.TRAINING]
    if training:
        top = max(training)
        session.execute(
            update(Trial)
            .where(Trial.id == trial_id, Trial.total_batches < top)
            .values(total_batches=top)
        )
    if any(kind == MetricKind.VALIDATION for kind, _ in latest):
        trials_repo.refresh_trial_best(session, trial_id)
    return len(latest)


def _json_safe(value: Any) -> Any:
    if isinstance(value, float) and not math.isfinite(value):
        if math.isnan(value):
            return "NaN"
        return "Infinity" if value > 0 else "-Infinity"
    return value


# The whole batch travels as ONE JSON document, unpacked by the database (PostgreSQL's
# jsonb_to_recordset, SQLite's json_each) in one INSERT ... SELECT ... ON CONFLICT statement:
# per-row parameter processing (SQLAlchemy's, psycopg's array escaping) cost 3-5x more.
# Timestamps are written as each database stores them for the ORM: ISO 8601 with zone on
# PostgreSQL, naive UTC 'YYYY-MM-DD HH:MM:SS.ffffff' on SQLite.
_SET_ON_CONFLICT = """
    ON CONFLICT (trial_id, kind, total_batches) DO UPDATE SET
        metrics = excluded.metrics,
        total_records = excluded.total_records,
        total_epochs = excluded.total_epochs,
        reported_at = excluded.reported_at
"""
_COLUMNS = "trial_id, kind, total_batches, total_records, total_epochs, metrics, reported_at"
_POSTGRESQL_UPSERT = text(
    f"""
    INSERT INTO metrics ({_COLUMNS})
    SELECT :trial_id, r.kind, r.total_batches, r.total_records, r.total_epochs, r.metrics,
           r.reported_at
    FROM jsonb_to_recordset(CAST(:rows AS jsonb)) AS r(
        kind varchar, total_batches bigint, total_records bigint,
        total_epochs double precision, metrics jsonb, reported_at timestamptz)
    {_SET_ON_CONFLICT}
    """
)
# ``WHERE true`` keeps SQLite's parser from reading ON CONFLICT as a join constraint.
_SQLITE_UPSERT = text(
    f"""
    INSERT INTO metrics ({_COLUMNS})
    SELECT :trial_id, json_extract(value, '$.kind'), json_extract(value, '$.total_batches'),
           json_extract(value, '$.total_records'), json_extract(value, '$.total_epochs'),
           json_extract(value, '$.metrics'), json_extract(value, '$.reported_at')
    FROM json_each(:rows) WHERE true
    {_SET_ON_CONFLICT}
    """
)


def _postgresql_stamp(moment: datetime) -> str:
    return as_utc(moment).isoformat()


def _sqlite_stamp(moment: datetime) -> str:
    return as_utc(moment).replace(tzinfo=None).strftime("%Y-%m-%d %H:%M:%S.%f")


_UPSERTS: dict[str, tuple[TextClause, Callable[[datetime], str]]] = {
    "postgresql": (_POSTGRESQL_UPSERT, _postgresql_stamp),
    "sqlite": (_SQLITE_UPSERT, _sqlite_stamp),
}


def list_metrics(
    session: Session,
    trial_id: int,
    *,
    kind: MetricKind | None = None,
    after_batches: int | None = None,
    limit: int | None = None,
) -> list[Metric]:
    """A trial's metric rows ordered by ``(kind, total_batches)``; ``after_batches`` keeps only
    rows with a larger batch count (a cursor for incremental reads)."""
    query = select(Metric).where(Metric.trial_id == trial_id)
    if kind is not None:
        query = query.where(Metric.kind == kind)
    if after_batches is not None:
        query = query.where(Metric.total_batches > after_batches)
    query = query.order_by(Metric.kind, Metric.total_batches)
    if limit is not None:
        query = query.limit(limit)
    return list(session.scalars(query).all())


def validation_metrics_at(
    session: Session, trial_id: int, total_batches: int
) -> dict[str, Any] | None:
    """The validation metrics a trial reported at exactly ``total_batches``, if any."""
    return session.scalar(
        select(Metric.metrics).where(
            Metric.trial_id == trial_id,
            Metric.kind == MetricKind.VALIDATION,
            Metric.total_batches == total_batches,
        )
    )
