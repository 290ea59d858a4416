"""``/api/v1/workspaces``: Determined's workspaces and the projects in them.

Every signed-in user reads every workspace and project, creates workspaces, and creates
projects in a workspace that is not archived (as Determined's open source does). A workspace
is renamed, archived, unarchived or deleted by its creator or an administrator (403
otherwise). The default workspace, ``Uncategorized`` (id 1), is never renamed, archived or
deleted (409); neither is a workspace whose projects still hold experiments deleted (409:
move them with ``POST /experiments/{id}/move``, or delete them, first).
"""

from __future__ import annotations

from typing import Annotated

from fastapi import APIRouter, Path, Query, Response

from pedl.db import workspaces as workspaces_repo
from pedl.master.api._auth import (
    OWNER_RESPONSES,
    USER_AUTH_RESPONSES,
    CurrentUser,
    require_owner,
    require_user,
)
from pedl.master.api._deps import MAX_INT_ID, ReadSession, WriteSession
from pedl.master.api._errors import ERROR_RESPONSES
from pedl.master.api._workspace_convert import project_public, projects_public, workspace_public
from pedl.master.api._workspace_schemas import (
    MAX_NAME_CHARS,
    ProjectCreate,
    ProjectPublic,
    WorkspaceCreate,
    WorkspacePatch,
    WorkspacePublic,
)

router = APIRouter(
    prefix="/workspaces",
    tags=["workspaces"],
    responses={**ERROR_RESPONSES, **USER_AUTH_RESPONSES},
)

WorkspaceId = Annotated[int, Path(ge=1, le=MAX_INT_ID, description="Workspace id.")]
NameFilter = Annotated[
    str | None, Query(max_length=MAX_NAME_CHARS, description="Only the one of this exact name.")
]
ArchivedFilter = Annotated[
    bool | None,
    Query(description="true: only archived ones; false: only the others; left out: both."),
]


@router.get("", dependencies=[require_user])
def list_workspaces(
    session: ReadSession, name: NameFilter = None, archived: ArchivedFilter = None
) -> list[WorkspacePublic]:
    """Every workspace, by id (``name``: only the one so named; ``archived``: only archived
    ones, or only the others)."""
    return [
        workspace_public(session, w)
        for w in workspaces_repo.list_workspaces(session, name=name, archived=archived)
    ]


@router.post("", status_code=201)
def create_workspace(
    body: WorkspaceCreate, session: WriteSession, user: CurrentUser
) -> WorkspacePublic:
    """A new workspace, owned by the caller (409 naming ``name`` if one is so named)."""
    workspace = workspaces_repo.create_workspace(session, name=body.name, owner=user.username)
    return workspace_public(session, workspace)


@router.get("/{workspace_id}", dependencies=[require_user])
def get_workspace(workspace_id: WorkspaceId, session: ReadSession) -> WorkspacePublic:
    """One workspace (404 if none)."""
    return workspace_public(session, workspaces_repo.get_workspace(session, workspace_id))


def _owned(session: WriteSession, workspace_id: int, user: CurrentUser) -> None:
    workspace = workspaces_repo.get_workspace(session, workspace_id)
    require_owner(user, workspace.owner, f"workspace {workspace.name!r}")


@router.patch("/{workspace_id}", responses=OWNER_RESPONSES)
def patch_workspace(
    workspace_id: WorkspaceId, body: WorkspacePatch, session: WriteSession, user: CurrentUser
) -> WorkspacePublic:
    """Rename the workspace (its creator or an administrator; not the default one)."""
    _owned(session, workspace_id, user)
    workspace = workspaces_repo.get_workspace(session, workspace_id)
    if body.name is not None:
        workspace = workspaces_repo.rename_workspace(session, workspace_id, body.name)
    return workspace_public(session, workspace)


@router.post("/{workspace_id}/archive", responses=OWNER_RESPONSES)
def archive_workspace(
    workspace_id: WorkspaceId, session: WriteSession, user: CurrentUser
) -> WorkspacePublic:
    """Archive the workspace: no project is created in it, no experiment in its projects
    (no-op when archived; its creator or an administrator; not the default one)."""
    _owned(session, workspace_id, user)
    workspace = workspaces_repo.set_workspace_archived(session, workspace_id, True)
    return workspace_public(session, workspace)


@router.post("/{workspace_id}/unarchive", responses=OWNER_RESPONSES)
def unarchive_workspace(
    workspace_id: WorkspaceId, session: WriteSession, user: CurrentUser
) -> WorkspacePublic:
    """Undo ``archive`` (no-op when not archived)."""
    _owned(session, workspace_id, user)
    workspace = workspaces_repo.set_workspace_archived(session, workspace_id, False)
    return workspace_public(session, workspace)


@router.delete("/{workspace_id}", status_code=204, responses=OWNER_RESPONSES)
def delete_workspace(
    workspace_id: WorkspaceId, session: WriteSession, user: CurrentUser
) -> Response:
    """Delete the workspace and its projects (its creator or an administrator); 409 while
    its projects hold experiments, or for the default workspace."""
    _owned(session, workspace_id, user)
    workspaces_repo.delete_workspace(session, workspace_id)
    return Response(status_code=204)


@router.get("/{workspace_id}/projects", dependencies=[require_user])
def list_workspace_projects(
    workspace_id: WorkspaceId,
    session: ReadSession,
    name: NameFilter = None,
    archived: ArchivedFilter = None,
) -> list[ProjectPublic]:
    """The workspace's projects by id, with their experiment counts (404 if no workspace)."""
    workspaces_repo.get_workspace(session, workspace_id)
    projects = workspaces_repo.list_projects(
        session, workspace_id=workspace_id, name=name, archived=archived
    )
    return projects_public(session, projects)


@router.post("/{workspace_id}/projects", status_code=201)
def create_project(
    workspace_id: WorkspaceId, body: ProjectCreate, session: WriteSession, user: CurrentUser
) -> ProjectPublic:
    """A new project in the workspace, owned by the caller: 404 if no workspace, 409 if it is
    archived or the name (in this workspace) or ``key`` is taken."""
    project = workspaces_repo.create_project(
        session,
        workspace_id=workspace_id,
        name=body.name,
        owner=user.username,
        description=body.description,
        key=body.key,
    )
    return project_public(session, project)
