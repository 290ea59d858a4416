"""Finding a workspace, or a project of a workspace, by name (as Determined's SDK and CLI
name them)."""

from __future__ import annotations

from typing import Any

from pedl.client._errors import NotFoundError
from pedl.client._session import Session


def workspace_by_name(session: Session, name: str) -> dict[str, Any]:
    """The master's record of the workspace ``name`` (:class:`NotFoundError` if none)."""
    found = session.get("/workspaces", params={"name": name})
    if not found:
        raise NotFoundError(f"No workspace found with name {name}", status_code=404)
    record: dict[str, Any] = found[0]
    return record


def project_by_names(session: Session, workspace_name: str, project_name: str) -> dict[str, Any]:
    """The master's record of the project ``project_name`` in the workspace
    ``workspace_name`` (:class:`NotFoundError` naming the one missing)."""
    workspace = workspace_by_name(session, workspace_name)
    found = session.get(f"/workspaces/{workspace['id']}/projects", params={"name": project_name})
    if not found:
        raise NotFoundError(
            f"Project '{project_name}' not found in workspace '{workspace_name}'.",
            status_code=404,
        )
    record: dict[str, Any] = found[0]
    return record
