"""The policy bounds of :mod:`pedl.config` can be changed with ``PEDL_MAX_*`` variables.

Each is read once, when ``pedl.config`` is imported, so each case runs in a fresh interpreter
(importing ``pedl.config`` only: no TensorFlow) with the variable set.
"""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest

from tests.waits import scaled

GRID_OF_12 = """
name: g
hyperparameters:
  global_batch_size: 16
  a: {type: categorical, vals: [1, 2, 3]}
  b: {type: categorical, vals: [1, 2, 3, 4]}
searcher: {name: grid, metric: m, max_length: {batches: 1}}
"""

CHECK = """
import sys
from pedl.config import ConfigError, parse_config
try:
    parse_config(sys.stdin.read())
except ConfigError as err:
    print(err)
else:
    print("ok")
"""


def run(env: dict[str, str], config: str = GRID_OF_12) -> subprocess.CompletedProcess[str]:
    clean = {k: v for k, v in os.environ.items() if not k.startswith("PEDL_MAX_")}
    return subprocess.run(
        [sys.executable, "-c", CHECK],
        input=config,
        env={**clean, **env},
        capture_output=True,
        text=True,
        timeout=scaled(60),
    )


def test_the_grid_limit_is_the_default_without_the_variable() -> None:
    result = run({})
    assert result.returncode == 0, result.stderr
    assert result.stdout.strip() == "ok"


def test_a_lowered_grid_limit_refuses_a_grid_naming_the_variable() -> None:
    result = run({"PEDL_MAX_GRID_POINTS": "10"})
    assert result.returncode == 0, result.stderr
    assert "the grid has 12 points" in result.stdout
    assert "more than the limit of 10 (PEDL_MAX_GRID_POINTS)" in result.stdout


def test_a_lowered_batch_size_limit_is_enforced() -> None:
    result = run({"PEDL_MAX_GLOBAL_BATCH_SIZE": "8"})
    assert "must be at most 8 (PEDL_MAX_GLOBAL_BATCH_SIZE), got 16" in result.stdout


def test_a_lowered_config_size_limit_refuses_the_text() -> None:
    result = run({"PEDL_MAX_CONFIG_BYTES": "100"})
    assert result.returncode == 0, result.stderr
    assert "more than the limit of 100" in result.stdout


@pytest.mark.parametrize(
    ("variable", "value"),
    [
        ("PEDL_MAX_GRID_POINTS", "many"),
        ("PEDL_MAX_TRIALS", "0"),
        ("PEDL_MAX_CONFIG_DEPTH", "100000"),
        ("PEDL_MAX_GLOBAL_BATCH_SIZE", str(2**40)),
    ],
)
def test_a_bad_value_is_refused_naming_the_variable(variable: str, value: str) -> None:
    result = run({variable: value})
    assert result.returncode != 0
    assert f"{variable} must be a whole number" in result.stderr
    assert repr(value) in result.stderr


def test_the_command_says_a_bad_value_in_one_line_without_a_traceback(tmp_path: Path) -> None:
    # A command that reads the limits: creating an experiment (a list never imports them).
    (tmp_path / "config.yaml").write_text(GRID_OF_12)
    clean = {k: v for k, v in os.environ.items() if not k.startswith("PEDL_MAX_")}
    result = subprocess.run(
        [sys.executable, "-m", "pedl", "experiment", "create", "config.yaml", "."],
        env={**clean, "PEDL_MAX_TRIALS": "lots", "PEDL_MASTER": "http://127.0.0.1:9"},
        cwd=tmp_path,
        capture_output=True,
        text=True,
        timeout=scaled(60),
    )
    assert result.returncode == 2
    assert result.stderr.strip().splitlines() == [
        "Error: PEDL_MAX_TRIALS must be a whole number of 1 or more, got 'lots'"
    ]
