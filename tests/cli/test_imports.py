"""The ``pedl`` command imports only what it runs: ``--help``, each group's ``--help`` and the
client commands load neither the server stack (FastAPI, uvicorn, Starlette, SQLAlchemy,
Alembic) nor a framework (TensorFlow, Keras) nor Optuna or Ray. Each command runs as ``pedl``
runs it (:func:`pedl.cli.main`, in a fresh interpreter), and what it left in ``sys.modules``
is checked at its end."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import click
import pytest

from pedl.cli._main import COMMANDS, load_command, short_help
from tests.client.helpers import LiveMaster
from tests.waits import scaled

HEAVY = {
    "fastapi",
    "uvicorn",
    "starlette",
    "sqlalchemy",
    "alembic",
    "tensorflow",
    "keras",
    "optuna",
    "ray",
}

RUN = """
import json, sys
from pedl.cli import main
watched = set(json.loads(sys.argv[2]))
sys.argv = ["pedl", *json.loads(sys.argv[1])]
try:
    main()
except SystemExit as end:
    status = end.code
else:
    status = 0
heavy = sorted(name for name in watched if name in sys.modules)
print("HEAVY:" + ",".join(heavy))
sys.exit(status)
"""


DET_RUN = RUN.replace("from pedl.cli import main", "from pedl.cli import det_main as main").replace(
    'sys.argv = ["pedl",', 'sys.argv = ["det",'
)
"""The same for ``det`` (:func:`pedl.cli.det_main`)."""


CONFIG_SCHEMA = "pedl.config"
"""The experiment config's schema (pydantic models, ~0.3 s of CPU to import): for the commands
that read or write a config, not for lists and describes."""


def run_pedl(
    *args: str, script: str = RUN, watched: set[str] = HEAVY
) -> tuple[subprocess.CompletedProcess[str], list[str]]:
    """``pedl ARGS`` in a fresh interpreter: its result, and which of the ``watched`` modules
    (by default the heavy packages) it imported."""
    result = subprocess.run(
        [sys.executable, "-c", script, json.dumps(args), json.dumps(sorted(watched))],
        capture_output=True,
        text=True,
        timeout=scaled(120),
    )
    last = result.stdout.strip().splitlines()[-1] if result.stdout.strip() else ""
    assert last.startswith("HEAVY:"), (result.stdout, result.stderr)
    return result, [name for name in last.removeprefix("HEAVY:").split(",") if name]


HELPS = [
    ["--help"],
    ["experiment", "--help"],
    ["experiment", "create", "--help"],
    ["experiment", "list", "--help"],
    ["trial", "--help"],
    ["trial", "logs", "--help"],
    ["checkpoint", "--help"],
    ["model", "--help"],
    ["user", "--help"],
    ["master", "--help"],
    ["master", "info", "--help"],
    ["template", "--help"],
    ["tensorboard", "--help"],
    ["job", "--help"],
    ["e", "ls", "--help"],
    ["version", "--help"],
]


@pytest.mark.parametrize("args", HELPS, ids=" ".join)
def test_help_imports_no_server_and_no_framework(args: list[str]) -> None:
    result, heavy = run_pedl(*args)
    assert result.returncode == 0, result.stderr
    assert "Usage:" in result.stdout
    assert heavy == [], f"`pedl {' '.join(args)}` imported {heavy}"


CLIENT_COMMANDS = [
    ["experiment", "list"],
    ["experiment", "list", "--json"],
    ["user", "list"],
    ["user", "whoami"],
    ["model", "list"],
    ["template", "list"],
    ["tensorboard", "list"],
    ["master", "info"],
    ["slot", "list"],
    ["job", "list"],
    ["version"],
]


@pytest.mark.parametrize("args", CLIENT_COMMANDS, ids=" ".join)
def test_client_commands_import_no_server_and_no_framework(
    master: LiveMaster, args: list[str]
) -> None:
    result, heavy = run_pedl("--master", master.url, *args, watched=HEAVY | {CONFIG_SCHEMA})
    assert result.returncode == 0, result.stderr
    assert heavy == [], f"`pedl {' '.join(args)}` imported {heavy}"


def test_an_experiment_created_and_described_on_a_master_imports_no_server(
    master: LiveMaster, config_file: Path, model_dir: Path
) -> None:
    # Packaging the model definition and checking the config: still no framework, no server.
    created, heavy = run_pedl(
        "--master", master.url, "experiment", "create", str(config_file), str(model_dir), "--paused"
    )
    assert created.returncode == 0, created.stderr
    assert heavy == [], f"`pedl experiment create` imported {heavy}"
    experiment_id = created.stdout.split("Created experiment ")[1].split()[0]
    for args in (
        ["experiment", "describe", experiment_id],
        ["experiment", "config", experiment_id],
    ):
        result, heavy = run_pedl("--master", master.url, *args)
        assert result.returncode == 0, result.stderr
        assert heavy == [], f"`pedl {' '.join(args)}` imported {heavy}"


DET_HELPS = [["--help"], ["-h"], ["e", "ls", "--help"], ["t", "describe", "-h"], ["user", "-h"]]


@pytest.mark.parametrize("args", DET_HELPS, ids=" ".join)
def test_det_help_imports_no_server_and_no_framework(args: list[str]) -> None:
    result, heavy = run_pedl(*args, script=DET_RUN)
    assert result.returncode == 0, result.stderr
    assert "Usage: det" in result.stdout
    assert heavy == [], f"`det {' '.join(args)}` imported {heavy}"


DET_CLIENT_COMMANDS = [
    ["e", "list"],
    ["e", "list", "--csv"],
    ["user", "list"],
    ["model", "list"],
    ["template", "list"],
    ["tensorboard", "list"],
]


@pytest.mark.parametrize("args", DET_CLIENT_COMMANDS, ids=" ".join)
def test_det_client_commands_import_no_server_and_no_framework(
    master: LiveMaster, args: list[str]
) -> None:
    result, heavy = run_pedl(
        "-m", master.url, *args, script=DET_RUN, watched=HEAVY | {CONFIG_SCHEMA}
    )
    assert result.returncode == 0, result.stderr
    assert heavy == [], f"`det {' '.join(args)}` imported {heavy}"


@pytest.mark.parametrize("name", sorted(COMMANDS))
def test_the_listed_help_is_the_commands_own(name: str) -> None:
    """``pedl --help`` lists each group from :data:`COMMANDS` without importing it: the help
    written there is the group's own (``master``'s says also what ``master info`` is)."""
    module, attribute, help_text = COMMANDS[name]
    command = load_command(module, attribute)
    assert isinstance(command, click.Command)
    if name == "master":
        assert command.help is not None and "Run the PEDL master" in command.help
        return
    assert command.help is not None
    assert help_text == " ".join(command.help.split("\n\n")[0].split())
    assert short_help(help_text) == command.get_short_help_str()
