"""Queries on workspaces and projects, and on which project an experiment is in.

The default workspace and project (``Uncategorized``, id 1 each, see
:mod:`pedl.db._workspace_models`) are immutable: renaming, archiving or deleting them is a
:class:`ConflictError`. A project or workspace that still holds experiments is not deleted
(:class:`ConflictError` saying how many): move or delete its experiments first (Determined
deletes them with it; PEDL does not delete experiments, and their checkpoints, as a side
effect).
"""

from __future__ import annotations

import secrets
import string
from collections.abc import Sequence
from dataclasses import dataclass

from sqlalchemy import func, select
from sqlalchemy.orm import Session

from pedl.db._errors import ConflictError, NotFoundError
from pedl.db._models import Experiment
from pedl.db._workspace_models import (
    DEFAULT_NAME,
    DEFAULT_PROJECT_ID,
    DEFAULT_PROJECT_KEY,
    DEFAULT_WORKSPACE_ID,
    Project,
    Workspace,
)
from pedl.vocabulary import ExperimentState

MAX_KEY = 5
"""Determined's ``MaxProjectKeyLength``."""
KEY_PREFIX = 3
"""Determined's ``MaxProjectKeyPrefixLength``: a generated key's letters from the name."""
_KEY_ALPHABET = string.ascii_uppercase + string.digits
_ACTIVE_STATES = (ExperimentState.ACTIVE,)
"""Determined counts a project's ACTIVE experiments as its active ones."""


@dataclass(frozen=True)
class ProjectCounts:
    """How many experiments a project holds, and how many of them have not ended."""

    experiments: int
    active: int


def ensure_defaults(session: Session) -> None:
    """Create the default workspace and project if they are missing (the migration made them;
    a database emptied row by row, as tests do, gets them back)."""
    if session.get(Workspace, DEFAULT_WORKSPACE_ID) is None:
        session.add(
            Workspace(id=DEFAULT_WORKSPACE_ID, name=DEFAULT_NAME, immutable=True, owner="admin")
        )
        session.flush()
    if session.get(Project, DEFAULT_PROJECT_ID) is None:
        session.add(
            Project(
                id=DEFAULT_PROJECT_ID,
                workspace_id=DEFAULT_WORKSPACE_ID,
                name=DEFAULT_NAME,
                key=DEFAULT_PROJECT_KEY,
                description="",
                immutable=True,
                owner="admin",
            )
        )
        session.flush()


# --- workspaces ------------------------------------------------------------------------------


def list_workspaces(
    session: Session, *, name: str | None = None, archived: bool | None = None
) -> list[Workspace]:
    """Workspaces by id: only the one called ``name`` when given; only archived (``True``) or
    only the others (``False``); ``None``: both."""
    query = select(Workspace).order_by(Workspace.id)
    if name is not None:
        query = query.where(Workspace.name == name)
    if archived is not None:
        query = query.where(Workspace.archived == archived)
    return list(session.scalars(query))


def get_workspace(session: Session, workspace_id: int) -> Workspace:
    """The workspace with this id; raises :class:`NotFoundError`."""
    workspace = session.get(Workspace, workspace_id)
    if workspace is None:
        raise NotFoundError("workspace", workspace_id)
    return workspace


def get_workspace_by_name(session: Session, name: str) -> Workspace:
    """The workspace called ``name``; raises :class:`NotFoundError`."""
    workspace = session.scalars(select(Workspace).where(Workspace.name == name)).one_or_none()
    if workspace is None:
        raise NotFoundError("workspace", repr(name))
    return workspace


def _check_free_workspace_name(session: Session, name: str, *, field: str = "name") -> None:
    if session.scalars(select(Workspace.id).where(Workspace.name == name)).first() is not None:
        raise ConflictError(f"a workspace named {name!r} exists", field=field)


def create_workspace(session: Session, *, name: str, owner: str) -> Workspace:
    """A new workspace; :class:`ConflictError` (field ``name``) if the name is taken."""
    _check_free_workspace_name(session, name)
    workspace = Workspace(name=name, owner=owner, archived=False, immutable=False)
    session.add(workspace)
    session.flush()
    return workspace


def _mutable_workspace(session: Session, workspace_id: int, verb: str) -> Workspace:
    workspace = get_workspace(session, workspace_id)
    if workspace.immutable:
        raise ConflictError(f"the default workspace {workspace.name!r} cannot be {verb}")
    return workspace


def rename_workspace(session: Session, workspace_id: int, name: str) -> Workspace:
    """Give the workspace a new name (:class:`ConflictError` if taken, or the default one)."""
    workspace = _mutable_workspace(session, workspace_id, "renamed")
    if name != workspace.name:
        _check_free_workspace_name(session, name)
        workspace.name = name
        session.flush()
    return workspace


def set_workspace_archived(session: Session, workspace_id: int, archived: bool) -> Workspace:
    """Archive or unarchive the workspace (no-op when already so; not the default one)."""
    workspace = _mutable_workspace(session, workspace_id, "archived or unarchived")
    workspace.archived = archived
    session.flush()
    return workspace


def delete_workspace(session: Session, workspace_id: int) -> None:
    """Delete the workspace and its projects; :class:`ConflictError` while any of them holds
    an experiment, or for the default workspace."""
    workspace = _mutable_workspace(session, workspace_id, "deleted")
    held = session.scalar(
        select(func.count(Experiment.id))
        .join(Project, Project.id == Experiment.project_id)
        .where(Project.workspace_id == workspace_id)
    )
    if held:
        raise ConflictError(
            f"workspace {workspace.name!r} still holds {held} experiment"
            f"{'s' if held != 1 else ''} in its projects: move them to another project "
            "(experiment move) or delete them first"
        )
    for project in session.scalars(select(Project).where(Project.workspace_id == workspace_id)):
        session.delete(project)
    session.delete(workspace)
    session.flush()


def count_projects(session: Session, workspace_id: int) -> int:
    """How many projects the workspace holds."""
    count = session.scalar(
        select(func.count(Project.id)).where(Project.workspace_id == workspace_id)
    )
    return int(count or 0)


# --- projects --------------------------------------------------------------------------------


def list_projects(
    session: Session,
    *,
    workspace_id: int | None = None,
    name: str | None = None,
    archived: bool | None = None,
) -> list[Project]:
    """Projects by id, those of ``workspace_id`` (all when ``None``), only the one called
    ``name`` when given, only archived or only other ones (``None``: both)."""
    query = select(Project).order_by(Project.id)
    if workspace_id is not None:
        query = query.where(Project.workspace_id == workspace_id)
    if name is not None:
        query = query.where(Project.name == name)
    if archived is not None:
        query = query.where(Project.archived == archived)
    return list(session.scalars(query))


def get_project(session: Session, project_id: int) -> Project:
    """The project with this id; raises :class:`NotFoundError`."""
    project = session.get(Project, project_id)
    if project is None:
        raise NotFoundError("project", project_id)
    return project


def get_project_by_names(session: Session, workspace_name: str, project_name: str) -> Project:
    """The project ``project_name`` of the workspace ``workspace_name``; raises
    :class:`NotFoundError` naming the one that is missing."""
    workspace = get_workspace_by_name(session, workspace_name)
    project = session.scalars(
        select(Project).where(Project.workspace_id == workspace.id, Project.name == project_name)
    ).one_or_none()
    if project is None:
        raise NotFoundError("project", f"{project_name!r} in workspace {workspace_name!r}")
    return project


def counts(session: Session, project_ids: Sequence[int]) -> dict[int, ProjectCounts]:
    """How many experiments each project holds, and how many of them have not ended."""
    if not project_ids:
        return {}
    totals = dict(
        session.execute(
            select(Experiment.project_id, func.count(Experiment.id))
            .where(Experiment.project_id.in_(project_ids))
            .group_by(Experiment.project_id)
        ).all()
    )
    active = dict(
        session.execute(
            select(Experiment.project_id, func.count(Experiment.id))
            .where(Experiment.project_id.in_(project_ids), Experiment.state.in_(_ACTIVE_STATES))
            .group_by(Experiment.project_id)
        ).all()
    )
    return {
        pid: ProjectCounts(int(totals.get(pid, 0)), int(active.get(pid, 0))) for pid in project_ids
    }


def _check_free_project_name(
    session: Session, workspace_id: int, name: str, *, field: str = "name"
) -> None:
    taken = session.scalars(
        select(Project.id).where(Project.workspace_id == workspace_id, Project.name == name)
    ).first()
    if taken is not None:
        raise ConflictError(f"a project named {name!r} exists in this workspace", field=field)


def _check_free_key(session: Session, key: str, *, field: str = "key") -> None:
    if session.scalars(select(Project.id).where(Project.key == key)).first() is not None:
        raise ConflictError(f"project key {key} is already in use", field=field)


def _generate_key(session: Session, name: str) -> str:
    """Determined's ``generateProjectKey``: up to three letters and digits of the name, upper
    case, then random ones up to five characters, unique."""
    prefix = "".join(c for c in name.upper() if c in _KEY_ALPHABET)[:KEY_PREFIX]
    for _ in range(100):
        suffix = "".join(secrets.choice(_KEY_ALPHABET) for _ in range(MAX_KEY - len(prefix)))
        key = prefix + suffix
        if session.scalars(select(Project.id).where(Project.key == key)).first() is None:
            return key
    raise ConflictError("could not generate a unique project key: give one", field="key")


def create_project(
    session: Session,
    *,
    workspace_id: int,
    name: str,
    owner: str,
    description: str = "",
    key: str | None = None,
) -> Project:
    """A new project in the workspace (:class:`NotFoundError` if none; :class:`ConflictError`
    if it is archived, or the name or ``key`` is taken). ``key`` (upper-cased) is generated
    from the name when not given."""
    workspace = get_workspace(session, workspace_id)
    if workspace.archived:
        raise ConflictError(
            f"workspace {workspace.name!r} is archived: unarchive it to add projects",
            field="workspace_id",
        )
    _check_free_project_name(session, workspace_id, name)
    if key is None:
        key = _generate_key(session, name)
    else:
        key = key.upper()
        _check_free_key(session, key)
    project = Project(
        workspace_id=workspace_id,
        name=name,
        key=key,
        description=description,
        owner=owner,
        archived=False,
        immutable=False,
    )
    session.add(project)
    session.flush()
    return project


def _mutable_project(session: Session, project_id: int, verb: str) -> Project:
    project = get_project(session, project_id)
    if project.immutable:
        raise ConflictError(f"the default project {project.name!r} cannot be {verb}")
    return project


def update_project(
    session: Session,
    project_id: int,
    *,
    name: str | None = None,
    description: str | None = None,
    key: str | None = None,
) -> Project:
    """Change the project's name, description or key (those given); the default project's
    name cannot change."""
    project = get_project(session, project_id)
    if name is not None and name != project.name:
        project = _mutable_project(session, project_id, "renamed")
        _check_free_project_name(session, project.workspace_id, name)
        project.name = name
    if key is not None and key.upper() != project.key:
        _check_free_key(session, key.upper())
        project.key = key.upper()
    if description is not None:
        project.description = description
    session.flush()
    return project


def set_project_archived(session: Session, project_id: int, archived: bool) -> Project:
    """Archive or unarchive the project (no-op when already so; not the default one);
    unarchiving one in an archived workspace is refused."""
    project = _mutable_project(session, project_id, "archived or unarchived")
    workspace = get_workspace(session, project.workspace_id)
    if not archived and workspace.archived:
        raise ConflictError(
            f"project {project.name!r} is in the archived workspace {workspace.name!r}: "
            "unarchive the workspace first"
        )
    project.archived = archived
    session.flush()
    return project


def delete_project(session: Session, project_id: int) -> None:
    """Delete the project; :class:`ConflictError` while it holds an experiment, or for the
    default project."""
    project = _mutable_project(session, project_id, "deleted")
    held = counts(session, [project_id])[project_id].experiments
    if held:
        raise ConflictError(
            f"project {project.name!r} still holds {held} experiment{'s' if held != 1 else ''}:"
            " move them to another project (experiment move) or delete them first"
        )
    session.delete(project)
    session.flush()


def writable_project(session: Session, project_id: int, *, field: str) -> Project:
    """The project an experiment is created in or moved to: :class:`NotFoundError` if there
    is none, :class:`ConflictError` naming ``field`` if it or its workspace is archived."""
    project = get_project(session, project_id)
    workspace = get_workspace(session, project.workspace_id)
    if project.archived or workspace.archived:
        what = f"project {project.name!r}" if project.archived else f"workspace {workspace.name!r}"
        raise ConflictError(
            f"{what} is archived: no experiment can be added to it (unarchive it first)",
            field=field,
        )
    return project


def move_experiment(session: Session, experiment_id: int, project_id: int) -> Experiment:
    """Put the experiment in the project (see :func:`writable_project`)."""
    project = writable_project(session, project_id, field="destination_project_id")
    experiment = session.get(Experiment, experiment_id, with_for_update=True)
    if experiment is None:
        raise NotFoundError("experiment", experiment_id)
    experiment.project_id = project.id
    session.flush()
    session.refresh(experiment)
    return experiment
