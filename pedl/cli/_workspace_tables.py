"""What ``det`` 0.38.1 prints for workspaces and projects: det's headers in det's order
(``determined.cli.workspace.WORKSPACE_HEADERS``, ``PROJECT_HEADERS``), and PEDL's records in
them. What PEDL does not have (agent users and groups, resource pool defaults, a checkpoint
storage per workspace) is an empty cell, as det writes a workspace without them.
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from typing import Any

from pedl.client import Experiment, Project, Workspace

Table = tuple[list[str], list[list[Any]]]

WORKSPACE_HEADERS = [
    "ID",
    "Name",
    "# Projects",
    "Agent Uid",
    "Agent Gid",
    "Agent User",
    "Agent Group",
    "Default Compute Pool",
    "Default Aux Pool",
]
PROJECT_HEADERS = ["ID", "Key", "Name", "Description", "# Experiments", "# Active Experiments"]


def workspaces(items: Iterable[tuple[Workspace, int | None]], *, from_list_api: bool) -> Table:
    """``determined.cli.workspace.render_workspaces``: each workspace with its number of
    projects; a describe (not ``from_list_api``) adds ``Checkpoint Storage Config``."""
    headers = list(WORKSPACE_HEADERS)
    if not from_list_api:
        headers.append("Checkpoint Storage Config")
    rows: list[list[Any]] = []
    for workspace, num_projects in items:
        row: list[Any] = [workspace.id, workspace.name, num_projects, *([None] * 6)]
        if not from_list_api:
            row.append(None)
        rows.append(row)
    return headers, rows


def projects(items: Iterable[Project]) -> Table:
    """``determined.cli.workspace.list_workspace_projects`` and ``project.render_project``."""
    rows = [
        [p.id, p.key, p.name, p.description, p.n_experiments, p.n_active_experiments] for p in items
    ]
    return list(PROJECT_HEADERS), rows


def with_project_columns(table: Table, items: Sequence[Experiment]) -> Table:
    """``det experiment list --show_project``: ``Workspace`` and ``Project`` first."""
    headers, rows = table
    names = [[e.to_dict().get("workspace_name"), e.to_dict().get("project_name")] for e in items]
    return ["Workspace", "Project", *headers], [n + r for n, r in zip(names, rows, strict=True)]
