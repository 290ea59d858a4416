"""Which project a new experiment goes into, as Determined's master chooses it.

``project_id`` of the request wins; else the config's ``workspace`` and ``project`` (both, or
neither), looked up by name; else the default project, ``Uncategorized``. Every refusal names
its field: an unknown ``project_id`` (404, ``project_id``), one of ``workspace``/``project``
without the other or a name that matches nothing (422, ``config.workspace`` or
``config.project``), an archived project or workspace (409, the field that chose it).
"""

from __future__ import annotations

from sqlalchemy.orm import Session

from pedl.db import NotFoundError
from pedl.db import workspaces as workspaces_repo
from pedl.db._workspace_models import DEFAULT_PROJECT_ID
from pedl.master.api._errors import ApiError
from pedl.master.api._schemas import ErrorIssue


def _config_error(field: str, message: str) -> ApiError:
    return ApiError(
        422, f"{field}: {message}", field=field, issues=[ErrorIssue(field=field, message=message)]
    )


def project_for_new_experiment(
    session: Session, project_id: int | None, workspace: str | None, project: str | None
) -> int:
    """The id of the project a new experiment goes into (see the module's docstring)."""
    if project_id is not None:
        try:
            workspaces_repo.get_project(session, project_id)
        except NotFoundError as err:
            raise ApiError(404, err.message, field="project_id") from None
        return workspaces_repo.writable_project(session, project_id, field="project_id").id
    if workspace is None and project is None:
        return workspaces_repo.writable_project(session, DEFAULT_PROJECT_ID, field="project_id").id
    if workspace is None or project is None:
        missing, given = ("workspace", "project") if workspace is None else ("project", "workspace")
        raise _config_error(
            f"config.{missing}",
            f"{given} is set but {missing} is not: set both (the project's workspace and its "
            "name) or neither",
        )
    try:
        found = workspaces_repo.get_workspace_by_name(session, workspace)
    except NotFoundError:
        raise _config_error("config.workspace", f"no workspace is named {workspace!r}") from None
    chosen = workspaces_repo.list_projects(session, workspace_id=found.id, name=project)
    if not chosen:
        raise _config_error(
            "config.project", f"workspace {workspace!r} has no project named {project!r}"
        )
    return workspaces_repo.writable_project(session, chosen[0].id, field="config.project").id
