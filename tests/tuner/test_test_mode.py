"""``pedl experiment create --test`` of a KerasTuner search whose config names no searcher
(the digits example as its README runs it): the test mode reads the searcher from the script,
as a local run and the master do, and passes."""

from __future__ import annotations

import shutil
import subprocess
import sys
from pathlib import Path

import pytest

from tests.waits import scaled

pytestmark = pytest.mark.slow

EXAMPLE = Path(__file__).parents[2] / "examples" / "digits_kerastuner"


def test_test_mode_of_a_config_naming_no_searcher(tmp_path: Path) -> None:
    copy = tmp_path / "digits_kerastuner"
    shutil.copytree(EXAMPLE, copy)
    assert "\nsearcher:" not in (copy / "search.yaml").read_text()
    result = subprocess.run(
        [sys.executable, "-m", "pedl", "experiment", "create", "--test", "search.yaml", "."],
        cwd=copy,
        capture_output=True,
        text=True,
        timeout=scaled(600),
    )
    assert result.returncode == 0, result.stdout + result.stderr
    assert "ok   load the experiment config" in result.stdout
    assert "The model definition works with PEDL." in result.stdout
