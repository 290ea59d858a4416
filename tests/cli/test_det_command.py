"""The ``det`` command as a Determined user types it: the installed console script (``det``
beside this interpreter), run as a subprocess against a real master, signed in through
``DET_*`` variables or ``-u``, with det's global options and its groups PEDL lacks."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest

import pedl
from pedl.client import Client
from tests.accounts import ADMIN, ADMIN_PASSWORD
from tests.client.helpers import LiveMaster
from tests.waits import scaled

DET = Path(sys.executable).parent / "det"


def det_env(config_dir: Path, **extra: str) -> dict[str, str]:
    """The environment of a det user: ``DET_*`` only (no ``PEDL_MASTER``/``PEDL_USER``)."""
    env = {
        k: v
        for k, v in os.environ.items()
        if k not in ("PEDL_MASTER", "PEDL_USER", "PEDL_PASSWORD", "DET_MASTER", "DET_USER")
    }
    env.update(PEDL_CONFIG_DIR=str(config_dir), **extra)
    return env


def run_det(
    *args: str, env: dict[str, str], stdin: str | None = None
) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [str(DET), *args],
        env=env,
        input=stdin,
        capture_output=True,
        text=True,
        timeout=scaled(120),
    )


def signed_in(master: LiveMaster, tmp_path: Path) -> dict[str, str]:
    return det_env(
        tmp_path / "det-config",
        DET_MASTER=master.url.removeprefix("http://"),
        DET_USER=ADMIN,
        DET_PASS=ADMIN_PASSWORD,
    )


def test_det_is_installed_and_shows_its_options(tmp_path: Path) -> None:
    assert DET.is_file()
    helped = run_det("--help", env=det_env(tmp_path))
    assert helped.returncode == 0, helped.stderr
    for option in ("-m, --master", "-u, --user", "-v, --version"):
        assert option in helped.stdout
    assert "experiment" in helped.stdout
    assert run_det("-h", env=det_env(tmp_path)).stdout == helped.stdout
    for flag in ("-v", "--version"):
        shown = run_det(flag, env=det_env(tmp_path))
        assert shown.returncode == 0 and shown.stdout == f"det {pedl.__version__}\n"


@pytest.mark.parametrize("with_scheme", [False, True])
def test_det_master_with_or_without_a_scheme(
    master: LiveMaster, tmp_path: Path, with_scheme: bool
) -> None:
    env = signed_in(master, tmp_path)
    if with_scheme:
        env["DET_MASTER"] = master.url
    listed = run_det("e", "list", env=env)
    assert listed.returncode == 0, listed.stderr
    assert listed.stdout.splitlines()[0].split("|")[0].strip() == "ID"


def test_global_master_option_beats_det_master(master: LiveMaster, tmp_path: Path) -> None:
    env = signed_in(master, tmp_path)
    env["DET_MASTER"] = "127.0.0.1:9"  # nothing listens there
    failed = run_det("user", "list", env=env)
    assert failed.returncode != 0
    address = master.url.removeprefix("http://")
    for option in ("-m", "--master"):
        listed = run_det(option, address, "user", "list", env=env)
        assert listed.returncode == 0, listed.stderr
        assert ADMIN in listed.stdout


def test_user_option_runs_as_that_user(master: LiveMaster, client: Client, tmp_path: Path) -> None:
    if not any(u.username == "det-runner" for u in client.list_users()):
        client.create_user("det-runner", "det-runner-password-1")
    env = det_env(tmp_path / "config", DET_MASTER=master.url)
    env["DET_PASS"] = "det-runner-password-1"
    me = run_det("-u", "det-runner", "user", "whoami", env=env)
    assert me.returncode == 0, me.stderr
    assert me.stdout == "You are logged in as user 'det-runner'\n"
    # No password in the environment and no saved token of that user: det asks for it.
    del env["DET_PASS"]
    asked = run_det("--user", ADMIN, "user", "whoami", env=env, stdin=ADMIN_PASSWORD + "\n")
    assert asked.returncode == 0, asked.stderr
    assert "Password for user 'admin'" in asked.stdout + asked.stderr
    assert ADMIN in asked.stdout.splitlines()[-1]


@pytest.mark.parametrize(
    ("args", "named"),
    [
        (["notebook", "start"], "notebook"),
        (["shell", "start", "--config-file", "x.yaml"], "shell"),
        (["cmd", "run", "echo", "hi"], "command"),
        (["command", "list"], "command"),
        (["task", "list"], "task"),
        (["deploy", "local", "cluster-up"], "deploy"),
    ],
)
def test_groups_pedl_lacks_end_with_one_line(tmp_path: Path, args: list[str], named: str) -> None:
    result = run_det(*args, env=det_env(tmp_path))
    assert result.returncode == 1
    assert result.stdout == ""
    lines = result.stderr.strip().splitlines()
    assert len(lines) == 1 and lines[0].startswith(f"det {named}: PEDL ")
    # ... and names what to use instead.
    assert any(instead in lines[0] for instead in ("`det ", "`pedl ", "the SDK"))


def test_det_abbreviations_reach_pedls_commands(master: LiveMaster, tmp_path: Path) -> None:
    env = signed_in(master, tmp_path)
    for args in (["u", "ls"], ["user", "list"]):
        result = run_det(*args, env=env)
        assert result.returncode == 0, result.stderr
        assert ADMIN in result.stdout


def test_version_as_det_prints_it(master: LiveMaster, tmp_path: Path) -> None:
    """det's ``describe_version``: YAML of the client's and the master's versions; the
    master's empty when nothing answers at its address (still exit 0)."""
    shown = run_det("version", env=signed_in(master, tmp_path))
    assert shown.returncode == 0, shown.stderr
    assert shown.stdout == (
        f"client:\n  version: {pedl.__version__}\nmaster:\n  cluster_id: ''\n"
        f"  master_id: ''\n  version: {pedl.__version__}\nmaster_address: {master.url}\n\n"
    )
    nobody = run_det("-m", "127.0.0.1:9", "version", env=det_env(tmp_path))
    assert nobody.returncode == 0, nobody.stderr
    assert "master:\n  cluster_id: ''\n  master_id: ''\n  version: ''\n" in nobody.stdout
