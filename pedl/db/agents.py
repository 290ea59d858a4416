"""Queries on the disabled agents and slots (``det agent disable``, ``det slot disable``)."""

from __future__ import annotations

from sqlalchemy import delete, select
from sqlalchemy.orm import Session

from pedl.db._agent_models import WHOLE_AGENT, DisabledSlot
from pedl.db._types import utcnow

__all__ = ["WHOLE_AGENT", "disable", "disabled", "enable"]


def disabled(session: Session, agent_id: str) -> dict[int, bool]:
    """The agent's disabled slots (:data:`WHOLE_AGENT`: the agent itself), each with whether
    it drains."""
    rows = session.execute(
        select(DisabledSlot.slot_id, DisabledSlot.drain).where(DisabledSlot.agent_id == agent_id)
    ).all()
    return {int(slot_id): bool(drain) for slot_id, drain in rows}


def disable(session: Session, agent_id: str, slot_id: int, *, drain: bool, by: str) -> None:
    """Disable the agent's slot (:data:`WHOLE_AGENT`: the agent); again: the new ``drain``."""
    row = session.get(DisabledSlot, (agent_id, slot_id))
    if row is None:
        session.add(
            DisabledSlot(
                agent_id=agent_id,
                slot_id=slot_id,
                drain=drain,
                disabled_at=utcnow(),
                disabled_by=by,
            )
        )
    else:
        row.drain, row.disabled_at, row.disabled_by = drain, utcnow(), by
    session.flush()


def enable(session: Session, agent_id: str, slot_id: int) -> bool:
    """Enable the agent's slot (:data:`WHOLE_AGENT`: the agent); whether it was disabled."""
    result = session.execute(
        delete(DisabledSlot).where(
            DisabledSlot.agent_id == agent_id, DisabledSlot.slot_id == slot_id
        )
    )
    return bool(getattr(result, "rowcount", 0))
