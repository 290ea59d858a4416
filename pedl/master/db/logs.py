"""Trial logs: idempotent appends keyed by the trial's sequence numbers."""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from datetime import datetime
from typing import Any

from sqlalchemy import Table, func, select
from sqlalchemy.orm import Session

from pedl.master.db._models import TrialLog
from pedl.master.db._upsert import dialect_insert


@dataclass(frozen=True)
class LogLine:
    """One line of trial output. ``seq`` is unique per trial, across its restarts."""

    seq: int
    message: str
    level: str | None = None
    stream: str | None = None
    timestamp: datetime | None = None
    rank: int | None = None
    """The worker of a multi-worker trial that wrote it (None: none)."""


def append_logs(session: Session, trial_id: int, lines: Sequence[LogLine]) -> int:
    """Insert the lines whose ``seq`` the trial has not sent before (``ON CONFLICT DO
    NOTHING``); a re-sent line keeps its first version. Returns how many were new."""
    if not lines:
        return 0
    unique: dict[int, dict[str, Any]] = {}
    for line in lines:
        unique.setdefault(
            line.seq,
            {
                "trial_id": trial_id,
                "seq": line.seq,
                "message": line.message,
                "level": line.level,
                "stream": line.stream,
                "timestamp": line.timestamp,
                "rank": line.rank,
            },
        )
    table = TrialLog.__table__
    assert isinstance(table, Table)
    statement = (
        dialect_insert(session, table)
        .on_conflict_do_nothing(index_elements=[table.c.trial_id, table.c.seq])
        .returning(table.c.seq)
    )
    inserted = session.execute(statement, list(unique.values())).all()
    return len(inserted)


def list_logs(
    session: Session,
    trial_id: int,
    *,
    offset: int = 0,
    limit: int = 1000,
    after_seq: int | None = None,
    rank: int | None = None,
) -> list[TrialLog]:
    """A trial's log lines ordered by ``seq``: skip ``offset`` lines (after ``after_seq`` when
    given; only those worker ``rank`` of a multi-worker trial wrote, when given: the master's
    lines and a one-process trial's have no rank) and return at most ``limit``."""
    query = select(TrialLog).where(TrialLog.trial_id == trial_id)
    if rank is not None:
        query = query.where(TrialLog.rank == rank)
    if after_seq is not None:
        query = query.where(TrialLog.seq > after_seq)
    query = query.order_by(TrialLog.seq).offset(offset).limit(limit)
    return list(session.scalars(query).all())


def last_log_seq(session: Session, trial_id: int) -> int | None:
    """The largest ``seq`` stored for a trial, ``None`` when it has no lines (a new writer
    continues numbering after it, so sequence numbers go on across process restarts)."""
    return session.scalar(select(func.max(TrialLog.seq)).where(TrialLog.trial_id == trial_id))
