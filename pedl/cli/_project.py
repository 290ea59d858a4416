"""``pedl project ...`` (``det project``/``p``): Determined's projects, named by their
workspace's name and their own.

Verbs, arguments and messages as ``det`` 0.38.1 has them: ``list``/``ls WORKSPACE``,
``list-experiments WORKSPACE PROJECT [-a]``, ``create WORKSPACE NAME [--description]
[--key]``, ``describe WORKSPACE PROJECT``, ``edit WORKSPACE PROJECT [--new_name]
[--description] [--key]``, ``archive``, ``unarchive``, ``delete [--yes]``.
"""

from __future__ import annotations

from collections.abc import Sequence

import click

from pedl.cli import _det_tables as det_tables
from pedl.cli._aliases import AliasGroup
from pedl.cli._context import console, current_client, det_output, print_det_table, print_json
from pedl.cli._tables import experiments_table
from pedl.cli._workspace import (
    WORKSPACE_NAME,
    add_list_projects,
    json_flag,
    listing_options,
    print_projects,
    project_json,
)
from pedl.client import Client, Experiment, PEDLError, Project

PROJECT_NAME = click.argument("project_name")
ALL = click.option(
    "-a",
    "--all",
    "show_all",
    is_flag=True,
    help="Show all experiments (including archived and other users').",
)


def _project(client: Client, workspace_name: str, project_name: str) -> Project:
    return client.get_workspace(workspace_name).get_project(project_name)


@click.group("project", cls=AliasGroup)
def project() -> None:
    """Manage projects (each in a workspace, each holding experiments)."""


add_list_projects(project, "list")


def _experiments(client: Client, found: Project, show_all: bool) -> list[Experiment]:
    """det's ``list_project_experiments``: without ``--all`` only the caller's, not archived."""
    users = None
    if not show_all:
        try:
            users = [client.whoami().username]
        except PEDLError:
            users = None
    return client.list_experiments(
        project_id=found.id, users=users, archived=None if show_all else False
    )


def _print_experiments(items: Sequence[Experiment], show_all: bool, as_json: bool) -> None:
    if as_json:
        print_json([e.to_dict() for e in items])
    elif det_output():
        print_det_table(det_tables.experiments(items, show_archived=show_all), False)
    else:
        console().print(experiments_table(items))


@project.command("list-experiments")
@WORKSPACE_NAME
@PROJECT_NAME
@ALL
@listing_options
@json_flag
def list_experiments(
    workspace_name: str,
    project_name: str,
    show_all: bool,
    sort_by: str,
    order_by: str,
    limit: int,
    offset: int | None,
    as_json: bool,
) -> None:
    """List the experiments of the project PROJECT_NAME in the workspace WORKSPACE_NAME
    (only yours, not archived, unless --all)."""
    client = current_client()
    found = _project(client, workspace_name, project_name)
    items = _experiments(client, found, show_all)
    key = "id" if sort_by == "id" else "name"
    items.sort(key=lambda e: (getattr(e, key) or "", e.id) if key == "name" else e.id)
    if order_by == "desc":
        items.reverse()
    start = offset or 0
    _print_experiments(items[start : start + limit], show_all, as_json)


@project.command("create")
@WORKSPACE_NAME
@click.argument("name")
@click.option("--description", default=None, help="Description of the project.")
@click.option("--key", default=None, help="Key of the project (1 to 5 letters and digits).")
@json_flag
def create(
    workspace_name: str, name: str, description: str | None, key: str | None, as_json: bool
) -> None:
    """Create the project NAME in the workspace WORKSPACE_NAME."""
    found = current_client().get_workspace(workspace_name)
    created = found.create_project(name, description, key=key)
    if as_json:
        print_json(project_json(created))
    else:
        print_projects([created])


@project.command("describe")
@WORKSPACE_NAME
@PROJECT_NAME
@ALL
@json_flag
def describe(workspace_name: str, project_name: str, show_all: bool, as_json: bool) -> None:
    """Describe the project, and list its experiments (only yours unless --all)."""
    client = current_client()
    found = _project(client, workspace_name, project_name)
    if as_json:
        print_json(project_json(found))
        return
    print_projects([found])
    click.echo("\nAssociated Experiments")
    items = sorted(_experiments(client, found, show_all), key=lambda e: e.id)
    _print_experiments(items, show_all, False)


@project.command("edit")
@WORKSPACE_NAME
@PROJECT_NAME
@click.option("--new_name", "--new-name", "new_name", default=None, help="New name.")
@click.option("--description", default=None, help="Description of the project.")
@click.option("--key", default=None, help="Key of the project.")
@json_flag
def edit(
    workspace_name: str,
    project_name: str,
    new_name: str | None,
    description: str | None,
    key: str | None,
    as_json: bool,
) -> None:
    """Change the project's name, description or key (its creator or an administrator)."""
    found = _project(current_client(), workspace_name, project_name)
    if new_name is not None:
        found.set_name(new_name)
    if description is not None:
        found.set_description(description)
    if key is not None:
        found.set_key(key)
    if as_json:
        print_json(project_json(found))
    else:
        print_projects([found])


@project.command("archive")
@WORKSPACE_NAME
@PROJECT_NAME
def archive(workspace_name: str, project_name: str) -> None:
    """Archive the project: no experiment is created in it or moved into it."""
    _project(current_client(), workspace_name, project_name).archive()
    click.echo(f"Successfully archived project {project_name}.")


@project.command("unarchive")
@WORKSPACE_NAME
@PROJECT_NAME
def unarchive(workspace_name: str, project_name: str) -> None:
    """Unarchive the project."""
    _project(current_client(), workspace_name, project_name).unarchive()
    click.echo(f"Successfully un-archived project {project_name}.")


@project.command("delete")
@WORKSPACE_NAME
@PROJECT_NAME
@click.option("--yes", is_flag=True, help="Automatically answer yes to prompts.")
def delete(workspace_name: str, project_name: str, yes: bool) -> None:
    """Delete the project (refused while it holds experiments: move or delete them first)."""
    found = _project(current_client(), workspace_name, project_name)
    if not yes and not click.confirm(
        f'Deleting project "{project_name}" will result in the \n'
        "unrecoverable deletion of this project.\n"
        "For a recoverable alternative, see the 'archive' command. Do you still \n"
        "wish to proceed?"
    ):
        click.echo("Aborting project deletion.")
        return
    current_client().get_workspace(workspace_name).delete_project(found.name or project_name)
    click.echo(f"Successfully deleted project {project_name}.")
