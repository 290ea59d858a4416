"""The tables of Determined's habits: archived experiments and config templates.

``Experiment.archived`` (mapped here) is true while the experiment has a row in
``archived_experiments``; deleting the experiment deletes that row (``ON DELETE CASCADE``).
"""

from __future__ import annotations

from datetime import datetime
from typing import Any

from sqlalchemy import ForeignKey, String, exists
from sqlalchemy.orm import Mapped, column_property, mapped_column

from pedl.master.db._models import Base, Experiment
from pedl.master.db._types import OrderedJSONType, utcnow


class ArchivedExperiment(Base):
    """An archived experiment: left out of lists unless they ask for it."""

    __tablename__ = "archived_experiments"

    experiment_id: Mapped[int] = mapped_column(
        ForeignKey("experiments.id", ondelete="CASCADE"), primary_key=True
    )
    archived_at: Mapped[datetime] = mapped_column(default=utcnow)


class Template(Base):
    """A named config template: merged under an experiment's config at its creation."""

    __tablename__ = "templates"

    name: Mapped[str] = mapped_column(String(255), primary_key=True)
    config: Mapped[dict[str, Any]] = mapped_column(OrderedJSONType)
    """The template's mapping, its keys in the order they were written."""
    owner: Mapped[str] = mapped_column(String(128))
    created_at: Mapped[datetime] = mapped_column(default=utcnow)
    updated_at: Mapped[datetime] = mapped_column(default=utcnow)


Experiment.archived = column_property(
    exists().where(ArchivedExperiment.experiment_id == Experiment.id)
)
