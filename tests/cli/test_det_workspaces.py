"""``det workspace``/``w`` and ``det project``/``p``, ``det e create --project_id``,
``det e move`` and ``det e list --show_project`` as a Determined user types them (the
installed ``det`` as a subprocess, on a real master), with det's tables (headers written out
here from det 0.38.1's ``determined/cli/workspace.py`` and ``project.py``) and messages; the
same verbs through ``pedl``."""

from __future__ import annotations

import json
import subprocess
import uuid
from pathlib import Path

from click.testing import CliRunner, Result

from pedl.cli import cli
from pedl.cli._presto import presto
from pedl.client import Client
from tests.cli.test_det_command import run_det, signed_in
from tests.client.helpers import LiveMaster, write_config, write_model_dir

# determined/cli/workspace.py, WORKSPACE_HEADERS (+ "Checkpoint Storage Config" off the list).
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
# determined/cli/workspace.py, PROJECT_HEADERS (project.render_project's too).
PROJECT_HEADERS = ["ID", "Key", "Name", "Description", "# Experiments", "# Active Experiments"]


def _ok(result: subprocess.CompletedProcess[str]) -> str:
    assert result.returncode == 0, result.stdout + result.stderr
    return result.stdout


def _rows(text: str) -> list[list[str]]:
    """A presto table's rows (after the header and the dashes), cells stripped."""
    lines = text.strip("\n").splitlines()
    return [[cell.strip() for cell in line.split("|")] for line in lines[2:]]


def _header(text: str) -> list[str]:
    return [cell.strip() for cell in text.splitlines()[0].split("|")]


def test_det_workspace_and_project_verbs(master: LiveMaster, tmp_path: Path) -> None:
    env = signed_in(master, tmp_path)
    team = f"team-{uuid.uuid4().hex[:6]}"

    created = _ok(run_det("workspace", "create", team, env=env))
    assert _header(created) == [*WORKSPACE_HEADERS, "Checkpoint Storage Config"]
    workspace_id = int(_rows(created)[0][0])
    assert _rows(created)[0][1:3] == [team, "0"]
    listed = _ok(run_det("w", "list", env=env))
    assert (
        listed
        == presto(
            WORKSPACE_HEADERS,
            [
                [int(r[0]), r[1], int(r[2]), None, None, None, None, None, None]
                for r in _rows(listed)
            ],
        )
        + "\n"
    ), (listed,)
    assert [r[1] for r in _rows(listed)][:1] == ["Uncategorized"]
    assert team in [r[1] for r in _rows(listed)]
    shown = json.loads(_ok(run_det("w", "describe", team, "--json", env=env)))
    assert (shown["id"], shown["name"], shown["numProjects"]) == (workspace_id, team, 0)

    project = _ok(run_det("p", "create", team, "vision", "--description", "cats", env=env))
    assert _header(project) == PROJECT_HEADERS
    row = _rows(project)[0]
    assert row[1].startswith("VIS") and row[2:] == ["vision", "cats", "0", "0"]
    keyed = _ok(run_det("project", "create", team, "speech", "--key", "sp1", env=env))
    assert _rows(keyed)[0][1] == "SP1"
    projects = _ok(run_det("w", "list-projects", team, "--sort-by", "name", env=env))
    assert [r[2] for r in _rows(projects)] == ["speech", "vision"]
    assert [r[2] for r in _rows(_ok(run_det("p", "ls", team, env=env)))] == ["vision", "speech"]

    storage = tmp_path / "checkpoints"
    storage.mkdir()
    config = write_config(tmp_path, storage)
    model = write_model_dir(tmp_path)
    project_id = row[0]
    made = _ok(run_det("e", "create", str(config), str(model), "--project_id", project_id, env=env))
    experiment_id = made.split("Created experiment ")[1].split()[0]
    shown_project = _ok(run_det("e", "list", "--show_project", env=env))
    assert _header(shown_project)[:4] == ["Workspace", "Project", "ID", "Owner"]
    mine = [r for r in _rows(shown_project) if r[2] == experiment_id]
    assert mine[0][:2] == [team, "vision"]
    in_project = _ok(run_det("p", "list-experiments", team, "vision", env=env))
    assert [r[0] for r in _rows(in_project)] == [experiment_id]
    described = _ok(run_det("p", "describe", team, "vision", env=env))
    head, experiments = described.split("\nAssociated Experiments\n")
    assert _rows(head)[0][4:] == ["1", "1"]
    assert _header(experiments)[:3] == ["ID", "Owner", "Name"]

    moved = _ok(run_det("e", "move", experiment_id, team, "speech", env=env))
    assert moved == f'Moved experiment {experiment_id} to project "speech"\n'
    assert _rows(_ok(run_det("p", "list-experiments", team, "vision", env=env))) == []
    nowhere = run_det("e", "move", experiment_id, team, "nope", env=env)
    assert nowhere.returncode == 1 and "nope" in nowhere.stderr

    edited = _ok(run_det("p", "edit", team, "vision", "--new_name", "images", env=env))
    assert _rows(edited)[0][2] == "images"
    assert _ok(run_det("p", "archive", team, "images", env=env)) == (
        "Successfully archived project images.\n"
    )
    refused = run_det("e", "move", experiment_id, team, "images", env=env)
    assert refused.returncode == 1 and "archived" in refused.stderr
    assert _ok(run_det("p", "unarchive", team, "images", env=env)) == (
        "Successfully un-archived project images.\n"
    )
    aborted = run_det("p", "delete", team, "images", env=env, stdin="n\n")
    assert "Aborting project deletion." in _ok(aborted)
    assert _ok(run_det("p", "delete", team, "images", "--yes", env=env)) == (
        "Successfully deleted project images.\n"
    )
    busy = run_det("w", "delete", team, "--yes", env=env)
    assert busy.returncode == 1 and "still holds 1 experiment" in busy.stderr
    _ok(run_det("e", "move", experiment_id, "Uncategorized", "Uncategorized", env=env))
    assert _ok(run_det("w", "archive", team, env=env)) == (
        f"Successfully archived workspace {team}.\n"
    )
    assert _ok(run_det("w", "unarchive", team, env=env)) == (
        f"Successfully un-archived workspace {team}.\n"
    )
    renamed = _ok(run_det("w", "edit", team, "--name", f"{team}-2", env=env))
    assert _rows(renamed)[0][1] == f"{team}-2"
    assert _ok(run_det("w", "delete", f"{team}-2", "--yes", env=env)) == (
        f"Successfully deleted workspace {team}-2.\n"
    )
    gone = run_det("w", "describe", f"{team}-2", env=env)
    assert gone.returncode == 1 and f"No workspace found with name {team}-2" in gone.stderr
    default = run_det("w", "delete", "Uncategorized", "--yes", env=env)
    assert default.returncode == 1 and "default workspace" in default.stderr


def _pedl(master: LiveMaster, *args: str) -> Result:
    return CliRunner().invoke(cli, ["--master", master.url, *args])


def test_pedl_workspace_and_project_verbs(
    master: LiveMaster, client: Client, tmp_path: Path
) -> None:
    team = f"pedl-{uuid.uuid4().hex[:6]}"
    created = _pedl(master, "workspace", "create", team)
    assert created.exit_code == 0, created.output
    assert "Workspaces" in created.output and team in created.output
    made = _pedl(master, "project", "create", team, "vision", "--key", "pv1")
    assert made.exit_code == 0, made.output
    assert "PV1" in made.output
    project = client.get_workspace(team).get_project("vision")
    storage = tmp_path / "checkpoints"
    storage.mkdir()
    config = write_config(tmp_path, storage)
    submitted = _pedl(
        master,
        "experiment",
        "create",
        str(config),
        str(write_model_dir(tmp_path)),
        "--project-id",
        str(project.id),
    )
    assert submitted.exit_code == 0, submitted.output
    listed = _pedl(master, "e", "list", "--project-id", str(project.id), "--json")
    assert listed.exit_code == 0, listed.output
    items = json.loads(listed.output)
    assert [(e["project_id"], e["workspace_name"]) for e in items] == [(project.id, team)]
    shown = _pedl(master, "experiment", "list", "--show-project")
    assert shown.exit_code == 0 and "workspace" in shown.output and team in shown.output
    experiments = _pedl(master, "project", "list-experiments", team, "vision")
    assert experiments.exit_code == 0 and str(items[0]["id"]) in experiments.output
    moved = _pedl(
        master, "experiment", "move", str(items[0]["id"]), "Uncategorized", "Uncategorized"
    )
    assert moved.exit_code == 0, moved.output
    assert _pedl(master, "project", "delete", team, "vision", "--yes").exit_code == 0
    assert _pedl(master, "workspace", "delete", team, "--yes").exit_code == 0
    missing = _pedl(master, "workspace", "describe", team)
    assert missing.exit_code == 1 and f"No workspace found with name {team}" in missing.output
    local = _pedl(master, "experiment", "create", str(config), "--local", "--project-id", "2")
    assert local.exit_code == 2 and "--project_id" in local.output
