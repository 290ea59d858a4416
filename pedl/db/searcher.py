"""The searcher's durable state: an append-only event log per experiment plus a snapshot.

Restoring a searcher = load the snapshot (if any), then replay the events after its
``event_seq``. Only one writer (the experiment's searcher loop) appends for an experiment at a
time; concurrent appends for the same experiment fail on the ``(experiment_id, seq)`` key.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

from sqlalchemy import Table, func, select
from sqlalchemy.orm import Session

from pedl.db._errors import NotFoundError
from pedl.db._models import Experiment, SearcherEvent, SearcherSnapshot
from pedl.db._types import utcnow
from pedl.db._upsert import dialect_insert


def append_searcher_events(
    session: Session, experiment_id: int, events: Sequence[Mapping[str, Any]]
) -> list[int]:
    """Append ``events`` (JSON documents) in order; returns their sequence numbers (the
    first event of an experiment is 1)."""
    if session.get(Experiment, experiment_id) is None:
        raise NotFoundError("experiment", experiment_id)
    last = session.scalar(
        select(func.max(SearcherEvent.seq)).where(SearcherEvent.experiment_id == experiment_id)
    )
    start = (last or 0) + 1
    now = utcnow()
    rows = [
        SearcherEvent(experiment_id=experiment_id, seq=start + i, event=dict(e), created_at=now)
        for i, e in enumerate(events)
    ]
    session.add_all(rows)
    session.flush()
    return [row.seq for row in rows]


def list_searcher_events(
    session: Session, experiment_id: int, *, after_seq: int = 0
) -> list[SearcherEvent]:
    """The experiment's events with ``seq > after_seq``, in order."""
    return list(
        session.scalars(
            select(SearcherEvent)
            .where(SearcherEvent.experiment_id == experiment_id, SearcherEvent.seq > after_seq)
            .order_by(SearcherEvent.seq)
        ).all()
    )


def save_searcher_snapshot(
    session: Session, experiment_id: int, *, event_seq: int, state: Mapping[str, Any]
) -> None:
    """Store (replace) the searcher state reached after events ``1..event_seq``."""
    table = SearcherSnapshot.__table__
    assert isinstance(table, Table)
    insert = dialect_insert(session, table)
    session.execute(
        insert.values(
            experiment_id=experiment_id, event_seq=event_seq, state=dict(state), updated_at=utcnow()
        ).on_conflict_do_update(
            index_elements=[table.c.experiment_id],
            set_={
                "event_seq": insert.excluded.event_seq,
                "state": insert.excluded.state,
                "updated_at": insert.excluded.updated_at,
            },
        )
    )


def load_searcher_snapshot(session: Session, experiment_id: int) -> SearcherSnapshot | None:
    """The latest snapshot of an experiment's searcher, ``None`` if none was saved."""
    return session.get(SearcherSnapshot, experiment_id, populate_existing=True)
