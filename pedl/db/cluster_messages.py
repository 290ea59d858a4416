"""Queries on the cluster-wide message (``det master cluster-message``): at most one is
current; setting one ends the one before, clearing ends the current one."""

from __future__ import annotations

from datetime import datetime

from sqlalchemy import or_, select, update
from sqlalchemy.orm import Session

from pedl.db._det_models import ClusterMessage
from pedl.db._types import utcnow


def current_message(session: Session, now: datetime | None = None) -> ClusterMessage | None:
    """The message that has not ended at ``now`` (default: now), whether it shows already or
    starts later; ``None`` when there is none."""
    moment = now or utcnow()
    query = (
        select(ClusterMessage)
        .where(or_(ClusterMessage.end_time.is_(None), ClusterMessage.end_time > moment))
        .order_by(ClusterMessage.created_at.desc(), ClusterMessage.id.desc())
        .limit(1)
    )
    return session.scalars(query).first()


def set_message(
    session: Session,
    message: str,
    *,
    start_time: datetime,
    end_time: datetime | None,
    created_by: str,
) -> ClusterMessage:
    """End the current message (if any) and make ``message`` the current one, shown from
    ``start_time`` until ``end_time`` (``None``: until cleared)."""
    now = utcnow()
    clear_message(session, now)
    row = ClusterMessage(
        message=message,
        start_time=start_time,
        end_time=end_time,
        created_at=now,
        created_by=created_by,
    )
    session.add(row)
    session.flush()
    return row


def clear_message(session: Session, now: datetime | None = None) -> int:
    """End every message that has not ended (at ``now``); how many there were."""
    moment = now or utcnow()
    result = session.execute(
        update(ClusterMessage)
        .where(or_(ClusterMessage.end_time.is_(None), ClusterMessage.end_time > moment))
        .values(end_time=moment)
    )
    return int(getattr(result, "rowcount", 0) or 0)
