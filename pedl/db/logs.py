"""Trial logs: idempotent appends keyed by the trial's sequence numbers, and their deletion
once an experiment's ``log_retention_days`` have passed."""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from datetime import datetime, timedelta
from typing import Any

from sqlalchemy import ColumnElement, Table, and_, delete, func, or_, select
from sqlalchemy.orm import Session

from pedl.db._models import Experiment, Trial, TrialLog
from pedl.db._types import utcnow
from pedl.db._upsert import dialect_insert


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


LOG_LEVELS = ("TRACE", "DEBUG", "INFO", "WARNING", "ERROR", "CRITICAL")
"""Log levels as Determined names them, least severe first. A line without a level, or with
one not named here, counts as INFO; ``WARN`` is WARNING and ``FATAL`` CRITICAL."""

_SPELLINGS = {"WARNING": ("WARNING", "WARN"), "CRITICAL": ("CRITICAL", "FATAL")}


@dataclass(frozen=True)
class LogFilter:
    """Which of a trial's lines to return (Determined's trial log filters): of the workers
    ``rank_ids`` (None: all), at least ``min_level`` (one of :data:`LOG_LEVELS`), written
    before ``timestamp_before`` and after ``timestamp_after`` (lines without a timestamp
    pass), containing ``search_text`` (case-sensitive)."""

    rank_ids: tuple[int, ...] | None = None
    min_level: str | None = None
    timestamp_before: datetime | None = None
    timestamp_after: datetime | None = None
    search_text: str | None = None

    def where(self, session: Session) -> list[ColumnElement[bool]]:
        """The filter as SQL conditions on :class:`TrialLog`."""
        conditions: list[ColumnElement[bool]] = []
        if self.rank_ids is not None:
            conditions.append(TrialLog.rank.in_(self.rank_ids))
        if self.min_level is not None:
            conditions.append(_at_least(self.min_level))
        if self.timestamp_before is not None:
            conditions.append(
                or_(TrialLog.timestamp.is_(None), TrialLog.timestamp < self.timestamp_before)
            )
        if self.timestamp_after is not None:
            conditions.append(
                or_(TrialLog.timestamp.is_(None), TrialLog.timestamp > self.timestamp_after)
            )
        if self.search_text is not None:
            # LIKE ignores case on SQLite: instr/strpos compare exactly on both databases.
            find = func.strpos if session.get_bind().dialect.name == "postgresql" else func.instr
            conditions.append(find(TrialLog.message, self.search_text) > 0)
        return conditions


def _spellings(levels: Sequence[str]) -> list[str]:
    return [spelling for level in levels for spelling in _SPELLINGS.get(level, (level,))]


def _at_least(level: str) -> ColumnElement[bool]:
    """Lines of ``level`` or above (see :data:`LOG_LEVELS` for lines without one)."""
    index = LOG_LEVELS.index(level)
    stored = func.upper(TrialLog.level)
    if index <= LOG_LEVELS.index("INFO"):
        below = _spellings(LOG_LEVELS[:index])
        if not below:
            return TrialLog.seq.is_not(None)
        return or_(TrialLog.level.is_(None), stored.not_in(below))
    return and_(TrialLog.level.is_not(None), stored.in_(_spellings(LOG_LEVELS[index:])))


def list_logs(
    session: Session,
    trial_id: int,
    *,
    offset: int = 0,
    limit: int = 1000,
    after_seq: int | None = None,
    rank: int | None = None,
    where: LogFilter | None = None,
    tail: bool = False,
) -> list[TrialLog]:
    """A trial's log lines ordered by ``seq``: skip ``offset`` lines (after ``after_seq`` when
    given; only those worker ``rank`` of a multi-worker trial wrote, when given: the master's
    lines and a one-process trial's have no rank; only those passing ``where``) and return at
    most ``limit``; with ``tail``, the last ``limit`` of them instead (still in ``seq``
    order)."""
    query = select(TrialLog).where(TrialLog.trial_id == trial_id)
    if rank is not None:
        query = query.where(TrialLog.rank == rank)
    if after_seq is not None:
        query = query.where(TrialLog.seq > after_seq)
    if where is not None:
        query = query.where(*where.where(session))
    if tail:
        query = query.order_by(TrialLog.seq.desc()).offset(offset).limit(limit)
        return list(reversed(session.scalars(query).all()))
    query = query.order_by(TrialLog.seq).offset(offset).limit(limit)
    return list(session.scalars(query).all())


def last_log_seq(session: Session, trial_id: int) -> int | None:
    """The largest ``seq`` stored for a trial, ``None`` when it has no lines (a new writer
    continues numbering after it, so sequence numbers go on across process restarts)."""
    return session.scalar(select(func.max(TrialLog.seq)).where(TrialLog.trial_id == trial_id))


def delete_expired_logs(
    session: Session, now: datetime | None = None, *, experiment_id: int | None = None
) -> int:
    """Delete the log lines of the trials of every ended experiment whose
    ``log_retention_days`` (0 or more; -1 and ``None`` keep them forever) have passed since
    it ended (only experiment ``experiment_id``'s when given); returns how many lines went."""
    moment = now or utcnow()
    query = select(Experiment.id, Experiment.ended_at, Experiment.log_retention_days).where(
        Experiment.ended_at.is_not(None), Experiment.log_retention_days >= 0
    )
    if experiment_id is not None:
        query = query.where(Experiment.id == experiment_id)
    expired = [
        exp_id
        for exp_id, ended_at, days in session.execute(query)
        if ended_at is not None and days is not None and ended_at + timedelta(days=days) <= moment
    ]
    if not expired:
        return 0
    trial_ids = select(Trial.id).where(Trial.experiment_id.in_(expired))
    result = session.execute(delete(TrialLog).where(TrialLog.trial_id.in_(trial_ids)))
    return int(getattr(result, "rowcount", 0) or 0)
