"""Workspaces and projects as the API shows them, with their counts read in the same session."""

from __future__ import annotations

from collections.abc import Sequence

from sqlalchemy.orm import Session

from pedl.db import Project, Workspace
from pedl.db import workspaces as workspaces_repo
from pedl.master.api._workspace_schemas import ProjectPublic, WorkspacePublic


def workspace_public(session: Session, workspace: Workspace) -> WorkspacePublic:
    """``workspace`` with how many projects it holds."""
    public = WorkspacePublic.model_validate(workspace)
    public.num_projects = workspaces_repo.count_projects(session, workspace.id)
    return public


def projects_public(session: Session, projects: Sequence[Project]) -> list[ProjectPublic]:
    """``projects`` with their workspaces' names and how many experiments each holds (one
    query for all the counts)."""
    counts = workspaces_repo.counts(session, [p.id for p in projects])
    names: dict[int, str] = {}
    shown = []
    for project in projects:
        if project.workspace_id not in names:
            names[project.workspace_id] = workspaces_repo.get_workspace(
                session, project.workspace_id
            ).name
        public = ProjectPublic.model_validate(project)
        public.workspace_name = names[project.workspace_id]
        public.num_experiments = counts[project.id].experiments
        public.num_active_experiments = counts[project.id].active
        shown.append(public)
    return shown


def project_public(session: Session, project: Project) -> ProjectPublic:
    """One project as :func:`projects_public` shows it."""
    return projects_public(session, [project])[0]
