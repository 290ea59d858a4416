"""Workspaces and projects, Determined's open-source way to organize experiments.

A workspace holds projects; a project holds experiments. Every experiment belongs to one
project (``experiments.project_id``); the default workspace ``Uncategorized`` (id 1) holds the
default project ``Uncategorized`` (id 1), where an experiment goes unless it says otherwise.
Both defaults are made by the migration that made the tables and can be neither archived,
renamed nor deleted (Determined's ``immutable``).

``Experiment.workspace_id``, ``Experiment.project_name`` and ``Experiment.workspace_name``
(mapped here) are read from the experiment's project with it.
"""

from __future__ import annotations

from datetime import datetime

from sqlalchemy import Boolean, ForeignKey, Integer, String, Text, UniqueConstraint, select
from sqlalchemy.orm import Mapped, column_property, mapped_column

from pedl.db._models import Base, Experiment
from pedl.db._types import utcnow

DEFAULT_WORKSPACE_ID = 1
DEFAULT_PROJECT_ID = 1
DEFAULT_NAME = "Uncategorized"
"""The name of both the default workspace and its default project (Determined's)."""
DEFAULT_PROJECT_KEY = "UNC"
"""The default project's key (Determined's migration gives it its name's first three letters
and a random suffix; PEDL's is fixed)."""


class Workspace(Base):
    """A workspace: a named group of projects."""

    __tablename__ = "workspaces"

    id: Mapped[int] = mapped_column(Integer, primary_key=True)
    name: Mapped[str] = mapped_column(String(128), unique=True)
    archived: Mapped[bool] = mapped_column(Boolean, default=False)
    """Archived: lists leave it out unless asked for it; no project is created in it."""
    immutable: Mapped[bool] = mapped_column(Boolean, default=False)
    """True for the default workspace: never renamed, archived or deleted."""
    owner: Mapped[str] = mapped_column(String(128))
    """The username of its creator: with administrators, the only one who may change it."""
    created_at: Mapped[datetime] = mapped_column(default=utcnow)


class Project(Base):
    """A project: a named group of experiments within a workspace."""

    __tablename__ = "projects"
    __table_args__ = (UniqueConstraint("workspace_id", "name"),)

    id: Mapped[int] = mapped_column(Integer, primary_key=True)
    workspace_id: Mapped[int] = mapped_column(
        ForeignKey("workspaces.id", ondelete="CASCADE"), index=True
    )
    name: Mapped[str] = mapped_column(String(128))
    key: Mapped[str] = mapped_column(String(5), unique=True)
    """Determined's project key: 1 to 5 letters and digits, upper case, unique."""
    description: Mapped[str] = mapped_column(Text, default="")
    archived: Mapped[bool] = mapped_column(Boolean, default=False)
    """Archived: no experiment is created in it or moved into it."""
    immutable: Mapped[bool] = mapped_column(Boolean, default=False)
    """True for the default project: never renamed, archived, moved or deleted."""
    owner: Mapped[str] = mapped_column(String(128))
    created_at: Mapped[datetime] = mapped_column(default=utcnow)


Experiment.workspace_id = column_property(
    select(Project.workspace_id).where(Project.id == Experiment.project_id).scalar_subquery(),
    deferred=True,
    group="project",
)
"""The workspace of the experiment's project."""
Experiment.project_name = column_property(
    select(Project.name).where(Project.id == Experiment.project_id).scalar_subquery(),
    deferred=True,
    group="project",
)
"""The name of the experiment's project."""
Experiment.workspace_name = column_property(
    select(Workspace.name)
    .join(Project, Project.workspace_id == Workspace.id)
    .where(Project.id == Experiment.project_id)
    .scalar_subquery(),
    deferred=True,
    group="project",
)
"""The name of the workspace of the experiment's project."""
