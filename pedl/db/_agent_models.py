"""The agents' and slots' settings: which are disabled (``det agent disable``, ``det slot
disable``), kept across the master's restarts."""

from __future__ import annotations

from datetime import datetime

from sqlalchemy import Boolean, Integer, String
from sqlalchemy.orm import Mapped, mapped_column

from pedl.db._models import Base
from pedl.db._types import utcnow

WHOLE_AGENT = -1
"""The ``slot_id`` of a row that disables the whole agent."""


class DisabledSlot(Base):
    """A disabled slot of an agent, or (``slot_id`` :data:`WHOLE_AGENT`) a disabled agent:
    no new trial is given to it. ``drain``: the trials running there when it was disabled
    were left to finish (else they were stopped, to run again elsewhere or later). Enabling
    it deletes the row."""

    __tablename__ = "disabled_slots"

    agent_id: Mapped[str] = mapped_column(String(128), primary_key=True)
    slot_id: Mapped[int] = mapped_column(Integer, primary_key=True, autoincrement=False)
    drain: Mapped[bool] = mapped_column(Boolean, default=False)
    disabled_at: Mapped[datetime] = mapped_column(default=utcnow)
    disabled_by: Mapped[str] = mapped_column(String(128))
