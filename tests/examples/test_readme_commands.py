"""README's local-mode commands, run exactly as written from a copy of the repository.

Each ``pedl experiment create --local`` / ``--test`` line of the shell blocks of README and of
the documentation pages its commands moved to (the quick start, Keras scripts) runs in a
fresh copy of the repository's examples (relative paths, the default run directory
``pedl-local``, ``cd`` as written) with the project's ``pedl`` first on ``PATH``; ``pedl
experiment resume pedl-local/exp-1`` runs after the run before it was interrupted with Ctrl-C
(SIGINT), as README says.
"""

from __future__ import annotations

import os
import re
import shutil
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest

ROOT = Path(__file__).parents[2]
README = ROOT / "README.md"
PEDL_BIN = Path(sys.executable).parent

# A run of a README command may train a search (adaptive.yaml: 32 trials); generous, since
# the machine may be loaded.
COMMAND_TIMEOUT = 1800


def shell_lines(markdown: str) -> list[str]:
    """The lines of the ```bash blocks of ``markdown``, comments removed."""
    lines: list[str] = []
    for block in re.findall(r"^```bash\n(.*?)^```", markdown, flags=re.M | re.S):
        for line in block.splitlines():
            command = line.split("  #", 1)[0].strip()
            if command:
                lines.append(command)
    return lines


def local_run_commands(markdown: str) -> list[str]:
    """README's commands that run an experiment here: ``--local`` and ``--test``."""
    return [
        line
        for line in shell_lines(markdown)
        if re.search(r"\bpedl experiment create --(local|test)\b", line)
    ]


DOCS = [ROOT / "docs" / "quickstart.md", ROOT / "docs" / "scripts.md"]
"""The documentation pages README's commands moved to (its front page keeps the first ones)."""

COMMANDS = list(
    dict.fromkeys(
        command
        for page in [README, *DOCS]
        for command in local_run_commands(page.read_text(encoding="utf-8"))
    )
)


def test_readme_names_the_script_example_as_run_from_its_directory() -> None:
    readme = local_run_commands(README.read_text(encoding="utf-8"))
    assert any(c.startswith("cd examples/digits_script") for c in readme), readme
    assert "pedl experiment resume pedl-local/exp-1" in shell_lines(README.read_text())
    quickstart = DOCS[0].read_text(encoding="utf-8")
    assert "pedl experiment resume pedl-local/exp-1" in shell_lines(quickstart)
    assert any("adaptive.yaml" in c for c in COMMANDS), COMMANDS


@pytest.fixture
def repo_copy(tmp_path: Path) -> Path:
    """What a user has after a clone: README and the examples, nothing run yet."""
    copy = tmp_path / "repo"
    copy.mkdir()
    shutil.copy(README, copy / "README.md")
    shutil.copytree(
        ROOT / "examples",
        copy / "examples",
        ignore=shutil.ignore_patterns("__pycache__", "pedl-local"),
    )
    return copy


def _environment() -> dict[str, str]:
    return {**os.environ, "PATH": f"{PEDL_BIN}{os.pathsep}{os.environ.get('PATH', '')}"}


def _run(command: str, cwd: Path) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        ["bash", "-c", command],
        cwd=cwd,
        env=_environment(),
        capture_output=True,
        text=True,
        timeout=COMMAND_TIMEOUT,
        check=False,
    )


@pytest.mark.slow
@pytest.mark.parametrize("command", COMMANDS)
def test_readme_command_runs_as_written(command: str, repo_copy: Path) -> None:
    result = _run(command, repo_copy)
    output = result.stdout + result.stderr
    assert result.returncode == 0, output
    if "--test" in command:
        assert "The model definition works with PEDL." in output, output
    else:
        assert "COMPLETED" in output, output
        assert "ERROR" not in output, output
        assert "Best trial: " in output, output


@pytest.mark.slow
def test_readme_resume_continues_an_interrupted_run(repo_copy: Path) -> None:
    create = "pedl experiment create --local examples/digits_keras/const.yaml examples/digits_keras"
    assert create in COMMANDS
    process = subprocess.Popen(
        ["bash", "-c", f"exec {create}"],
        cwd=repo_copy,
        env=_environment(),
        stdout=subprocess.PIPE,
        stderr=subprocess.STDOUT,
        text=True,
    )
    checkpoints = repo_copy / "pedl-local" / "exp-1" / "checkpoints"
    deadline = time.monotonic() + COMMAND_TIMEOUT
    while not (checkpoints.is_dir() and any(checkpoints.iterdir())):
        assert process.poll() is None, process.communicate()[0]
        assert time.monotonic() < deadline, "no checkpoint appeared"
        time.sleep(0.2)
    process.send_signal(signal.SIGINT)
    interrupted, _ = process.communicate(timeout=COMMAND_TIMEOUT)
    assert "PAUSED" in interrupted, interrupted

    result = _run("pedl experiment resume pedl-local/exp-1", repo_copy)
    output = result.stdout + result.stderr
    assert result.returncode == 0, output
    assert "COMPLETED" in output and "Best trial: 1" in output, output
