"""``pedl workspace ...`` (``det workspace``/``w``): Determined's workspaces.

Verbs, arguments and messages as ``det`` 0.38.1 has them: ``list``/``ls``, ``list-projects
NAME``, ``create NAME``, ``describe NAME``, ``edit NAME --name NEW``, ``archive NAME``,
``unarchive NAME``, ``delete NAME [--yes]``; ``--json`` where det has it. ``det`` prints det's
tables (:mod:`pedl.cli._workspace_tables`), ``pedl`` its own.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from typing import Any, TypeVar

import click
from rich.table import Table

from pedl.cli import _workspace_tables as tables
from pedl.cli._aliases import AliasGroup
from pedl.cli._context import console, current_client, det_output, print_det_table, print_json
from pedl.client import Project, Workspace

F = TypeVar("F", bound=Callable[..., Any])

WORKSPACE_NAME = click.argument("workspace_name")


def listing_options(command: F) -> F:
    """det's ``--sort-by id|name``, ``--order-by asc|desc``, ``--limit`` (200) and
    ``--offset`` of its workspace and project lists."""
    command = click.option(
        "--offset", type=click.IntRange(min=0), default=None, help="Items to skip."
    )(command)
    command = click.option(
        "--limit", type=click.IntRange(min=1), default=200, show_default=True, help="Most items."
    )(command)
    command = click.option(
        "--order-by",
        type=click.Choice(["asc", "desc"]),
        default="asc",
        show_default=True,
        help="Ascending or descending.",
    )(command)
    return click.option(
        "--sort-by",
        type=click.Choice(["id", "name"]),
        default="id",
        show_default=True,
        help="Sort by this field.",
    )(command)


def arrange(
    items: Sequence[Any], sort_by: str, order_by: str, limit: int, offset: int | None
) -> list[Any]:
    """``items`` sorted by ``sort_by`` (``order_by``), ``limit`` of them from ``offset``."""
    ordered = sorted(items, key=lambda item: getattr(item, sort_by), reverse=order_by == "desc")
    start = offset or 0
    return ordered[start : start + limit]


json_flag = click.option("--json", "as_json", is_flag=True, help="Print as JSON.")


def workspace_json(workspace: Workspace) -> dict[str, Any]:
    """A workspace as det's ``--json`` prints one (``v1Workspace``'s fields PEDL has)."""
    return {
        "id": workspace.id,
        "name": workspace.name,
        "archived": workspace.archived,
        "username": workspace.username,
        "numProjects": workspace.num_projects,
        "immutable": workspace.id == 1,
    }


def project_json(project: Project) -> dict[str, Any]:
    """det's ``render.project_to_json`` (and the key)."""
    return {
        "archived": project.archived,
        "description": project.description,
        "id": project.id,
        "key": project.key,
        "name": project.name,
        "notes": project.notes,
        "numActiveExperiments": project.n_active_experiments,
        "numExperiments": project.n_experiments,
        "workspaceId": project.workspace_id,
        "username": project.username,
    }


def _workspaces_table(items: Sequence[Workspace]) -> Table:
    table = Table(title="Workspaces")
    for column in ("id", "name", "projects", "owner", "archived"):
        table.add_column(column, justify="right" if column in ("id", "projects") else "left")
    for w in items:
        table.add_row(
            str(w.id),
            str(w.name),
            str(w.num_projects),
            str(w.username),
            "yes" if w.archived else "",
        )
    return table


def projects_table(items: Sequence[Project], title: str = "Projects") -> Table:
    """``pedl``'s table of projects."""
    table = Table(title=title)
    columns = ("id", "key", "name", "description", "experiments", "active", "owner", "archived")
    for column in columns:
        numeric = column in ("id", "experiments", "active")
        table.add_column(column, justify="right" if numeric else "left")
    for p in items:
        table.add_row(
            str(p.id),
            str(p.key),
            str(p.name),
            p.description or "",
            str(p.n_experiments),
            str(p.n_active_experiments),
            str(p.username),
            "yes" if p.archived else "",
        )
    return table


def print_workspaces(items: Sequence[Workspace], *, from_list_api: bool) -> None:
    """The workspaces as ``det`` (its table) or ``pedl`` (its own) prints them."""
    if det_output():
        rows = [(w, w.num_projects) for w in items]
        print_det_table(tables.workspaces(rows, from_list_api=from_list_api), False)
    else:
        console().print(_workspaces_table(items))


def print_projects(items: Sequence[Project]) -> None:
    """The projects as ``det`` (its table) or ``pedl`` (its own) prints them."""
    if det_output():
        print_det_table(tables.projects(items), False)
    else:
        console().print(projects_table(items))


@click.group("workspace", cls=AliasGroup)
def workspace() -> None:
    """Manage workspaces (each holds projects, which hold experiments)."""


@workspace.command("list")
@listing_options
@json_flag
def list_workspaces(
    sort_by: str, order_by: str, limit: int, offset: int | None, as_json: bool
) -> None:
    """List all workspaces."""
    items = arrange(current_client().list_workspaces(), sort_by, order_by, limit, offset)
    if as_json:
        print_json([workspace_json(w) for w in items])
    else:
        print_workspaces(items, from_list_api=True)


def add_list_projects(group: click.Group, name: str) -> None:
    """Add the command that lists a workspace's projects to ``group`` as ``name`` (det has
    it as ``workspace list-projects`` and as ``project list``)."""

    @group.command(name)
    @WORKSPACE_NAME
    @listing_options
    @json_flag
    def list_projects(
        workspace_name: str,
        sort_by: str,
        order_by: str,
        limit: int,
        offset: int | None,
        as_json: bool,
    ) -> None:
        """List the projects of the workspace WORKSPACE_NAME."""
        found = current_client().get_workspace(workspace_name)
        items = arrange(found.list_projects(), sort_by, order_by, limit, offset)
        if as_json:
            print_json([project_json(p) for p in items])
        else:
            print_projects(items)


add_list_projects(workspace, "list-projects")


@workspace.command("create")
@click.argument("name")
@json_flag
def create(name: str, as_json: bool) -> None:
    """Create the workspace NAME (a unique name, 1 to 128 characters)."""
    created = current_client().create_workspace(name)
    if as_json:
        print_json(workspace_json(created))
    else:
        print_workspaces([created], from_list_api=False)


@workspace.command("describe")
@WORKSPACE_NAME
@json_flag
def describe(workspace_name: str, as_json: bool) -> None:
    """Describe the workspace WORKSPACE_NAME."""
    found = current_client().get_workspace(workspace_name)
    if as_json:
        print_json(workspace_json(found))
    else:
        print_workspaces([found], from_list_api=False)


@workspace.command("edit")
@WORKSPACE_NAME
@click.option("--name", "new_name", default=None, help="The new name of the workspace.")
@json_flag
def edit(workspace_name: str, new_name: str | None, as_json: bool) -> None:
    """Rename the workspace WORKSPACE_NAME (its creator or an administrator)."""
    client = current_client()
    found = client.get_workspace(workspace_name)
    if new_name is not None:
        found.set_name(new_name)
    if as_json:
        print_json(workspace_json(found))
    else:
        print_workspaces([found], from_list_api=False)


@workspace.command("archive")
@WORKSPACE_NAME
def archive(workspace_name: str) -> None:
    """Archive the workspace WORKSPACE_NAME: no project or experiment is added to it."""
    current_client().get_workspace(workspace_name).archive()
    click.echo(f"Successfully archived workspace {workspace_name}.")


@workspace.command("unarchive")
@WORKSPACE_NAME
def unarchive(workspace_name: str) -> None:
    """Unarchive the workspace WORKSPACE_NAME."""
    current_client().get_workspace(workspace_name).unarchive()
    click.echo(f"Successfully un-archived workspace {workspace_name}.")


@workspace.command("delete")
@WORKSPACE_NAME
@click.option("--yes", is_flag=True, help="Automatically answer yes to prompts.")
def delete(workspace_name: str, yes: bool) -> None:
    """Delete the workspace WORKSPACE_NAME and its projects (refused while they hold
    experiments: move or delete those first)."""
    client = current_client()
    client.get_workspace(workspace_name)  # no such workspace: say so before asking
    if not yes and not click.confirm(
        f'Deleting workspace "{workspace_name}" will result \n'
        "in the unrecoverable deletion of all associated projects.\n"
        "For a recoverable alternative, see the 'archive' command. Do you still \n"
        "wish to proceed?"
    ):
        click.echo("Aborting workspace deletion.")
        return
    client.delete_workspace(workspace_name)
    click.echo(f"Successfully deleted workspace {workspace_name}.")
