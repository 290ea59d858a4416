"""The table of trials' system metrics (CPU, memory, disk, network and GPU use samples)."""

from __future__ import annotations

from datetime import datetime
from typing import Any

from sqlalchemy import ForeignKey, Integer, UniqueConstraint
from sqlalchemy.orm import Mapped, mapped_column

from pedl.db._models import Base
from pedl.db._types import BigIntPK


class SystemMetric(Base):
    """One sample of a trial process's system metrics, keyed by the worker's rank and when it
    was taken (a re-sent sample replaces itself)."""

    __tablename__ = "system_metrics"
    __table_args__ = (UniqueConstraint("trial_id", "rank", "sampled_at"),)

    id: Mapped[int] = mapped_column(BigIntPK, primary_key=True, autoincrement=True)
    trial_id: Mapped[int] = mapped_column(ForeignKey("trials.id", ondelete="CASCADE"))
    rank: Mapped[int] = mapped_column(Integer)
    """The worker of the trial that took it (0: the chief, or a one-process trial)."""
    sampled_at: Mapped[datetime]
    metrics: Mapped[dict[str, Any]]
    """``{name: value}``: see :mod:`pedl.exec._system_metrics` for the names."""
