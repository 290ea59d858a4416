"""The tables of Determined's habits: archived experiments, config templates and the
cluster-wide message.

``Experiment.archived`` (mapped here) is true while the experiment has a row in
``archived_experiments``; deleting the experiment deletes that row (``ON DELETE CASCADE``).
"""

from __future__ import annotations

from datetime import datetime
from typing import Any

from sqlalchemy import ForeignKey, Integer, String, Text, exists
from sqlalchemy.orm import Mapped, column_property, mapped_column

from pedl.db._models import Base, Experiment
from pedl.db._types import OrderedJSONType, utcnow


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


class ClusterMessage(Base):
    """A cluster-wide message (``det master cluster-message set``): shown to every user from
    ``start_time`` until ``end_time`` (``None``: until cleared). Setting one ends the previous
    one; clearing ends the current one. Ended rows stay as the history."""

    __tablename__ = "cluster_messages"

    id: Mapped[int] = mapped_column(Integer, primary_key=True)
    message: Mapped[str] = mapped_column(Text)
    start_time: Mapped[datetime]
    end_time: Mapped[datetime | None]
    created_at: Mapped[datetime] = mapped_column(default=utcnow)
    created_by: Mapped[str] = mapped_column(String(128))
