"""``/api/v1/projects``: one project (read, change, archive, delete), and
``/api/v1/experiments/{id}/move``: put an experiment in another project.

Projects are created in a workspace (``POST /workspaces/{id}/projects``). Every signed-in
user reads them; a project's creator or an administrator changes, archives or deletes it
(403 otherwise). The default project, ``Uncategorized`` (id 1), keeps its name and is never
archived or deleted (409); a project holding experiments is not deleted (409). An
experiment is moved by its owner or an administrator, into a project that is not archived and
whose workspace is not (409 naming ``destination_project_id``).
"""

from __future__ import annotations

from typing import Annotated

from fastapi import APIRouter, Path, Query, Response

from pedl.db import NotFoundError
from pedl.db import experiments as experiments_repo
from pedl.db import workspaces as workspaces_repo
from pedl.master.api._auth import (
    OWNER_RESPONSES,
    USER_AUTH_RESPONSES,
    CurrentUser,
    require_owner,
    require_user,
)
from pedl.master.api._deps import MAX_INT_ID, ExperimentId, ReadSession, WriteSession
from pedl.master.api._errors import ERROR_RESPONSES, ApiError
from pedl.master.api._schemas import ExperimentPublic
from pedl.master.api._workspace_convert import project_public, projects_public
from pedl.master.api._workspace_schemas import ExperimentMove, ProjectPatch, ProjectPublic

router = APIRouter(responses={**ERROR_RESPONSES, **USER_AUTH_RESPONSES})

ProjectId = Annotated[int, Path(ge=1, le=MAX_INT_ID, description="Project id.")]


@router.get("/projects", tags=["projects"], dependencies=[require_user])
def list_projects(
    session: ReadSession,
    workspace_id: Annotated[
        int | None, Query(ge=1, le=MAX_INT_ID, description="Only this workspace's projects.")
    ] = None,
    archived: Annotated[
        bool | None,
        Query(description="true: only archived ones; false: only the others; left out: both."),
    ] = None,
) -> list[ProjectPublic]:
    """Every project (of every workspace, or of ``workspace_id``), by id."""
    projects = workspaces_repo.list_projects(session, workspace_id=workspace_id, archived=archived)
    return projects_public(session, projects)


@router.get("/projects/{project_id}", tags=["projects"], dependencies=[require_user])
def get_project(project_id: ProjectId, session: ReadSession) -> ProjectPublic:
    """One project with its experiment counts (404 if none)."""
    return project_public(session, workspaces_repo.get_project(session, project_id))


def _owned(session: WriteSession, project_id: int, user: CurrentUser) -> None:
    project = workspaces_repo.get_project(session, project_id)
    require_owner(user, project.owner, f"project {project.name!r}")


@router.patch("/projects/{project_id}", tags=["projects"], responses=OWNER_RESPONSES)
def patch_project(
    project_id: ProjectId, body: ProjectPatch, session: WriteSession, user: CurrentUser
) -> ProjectPublic:
    """Change the project's name, description or key (its creator or an administrator; 409
    for a name or key taken, or a new name for the default project)."""
    _owned(session, project_id, user)
    project = workspaces_repo.update_project(
        session, project_id, name=body.name, description=body.description, key=body.key
    )
    return project_public(session, project)


@router.post("/projects/{project_id}/archive", tags=["projects"], responses=OWNER_RESPONSES)
def archive_project(
    project_id: ProjectId, session: WriteSession, user: CurrentUser
) -> ProjectPublic:
    """Archive the project: no experiment is created in it or moved into it (no-op when
    archived; not the default project)."""
    _owned(session, project_id, user)
    return project_public(session, workspaces_repo.set_project_archived(session, project_id, True))


@router.post("/projects/{project_id}/unarchive", tags=["projects"], responses=OWNER_RESPONSES)
def unarchive_project(
    project_id: ProjectId, session: WriteSession, user: CurrentUser
) -> ProjectPublic:
    """Undo ``archive`` (409 while its workspace is archived)."""
    _owned(session, project_id, user)
    project = workspaces_repo.set_project_archived(session, project_id, False)
    return project_public(session, project)


@router.delete(
    "/projects/{project_id}", tags=["projects"], status_code=204, responses=OWNER_RESPONSES
)
def delete_project(project_id: ProjectId, session: WriteSession, user: CurrentUser) -> Response:
    """Delete the project (its creator or an administrator); 409 while it holds
    experiments, or for the default project."""
    _owned(session, project_id, user)
    workspaces_repo.delete_project(session, project_id)
    return Response(status_code=204)


@router.post("/experiments/{experiment_id}/move", tags=["experiments"], responses=OWNER_RESPONSES)
def move_experiment(
    experiment_id: ExperimentId, body: ExperimentMove, session: WriteSession, user: CurrentUser
) -> ExperimentPublic:
    """Put the experiment in the project ``destination_project_id`` (its owner or an
    administrator): 404 if either is missing, 409 if the project or its workspace is
    archived."""
    experiment = experiments_repo.get_experiment(session, experiment_id)
    require_owner(user, experiment.owner, f"experiment {experiment_id}")
    try:
        workspaces_repo.get_project(session, body.destination_project_id)
    except NotFoundError as err:
        raise ApiError(404, err.message, field="destination_project_id") from None
    moved = workspaces_repo.move_experiment(session, experiment_id, body.destination_project_id)
    return ExperimentPublic.model_validate(moved)
