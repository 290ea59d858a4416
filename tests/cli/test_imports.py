"""``pedl --help`` stays light: no TensorFlow or Keras import."""

from __future__ import annotations

import subprocess
import sys

CHECK = """
import sys
from click.testing import CliRunner
from pedl.cli import cli
for args in (["--help"], ["experiment", "--help"], ["trial", "--help"], ["checkpoint", "--help"],
             ["master", "--help"], ["experiment", "create", "--help"]):
    result = CliRunner().invoke(cli, args)
    assert result.exit_code == 0, (args, result.output)
    assert "Usage:" in result.output
heavy = sorted(m for m in sys.modules if m.split(".")[0] in {"tensorflow", "keras"})
print("HEAVY:" + ",".join(heavy))
"""


def test_help_does_not_import_tensorflow() -> None:
    result = subprocess.run(
        [sys.executable, "-c", CHECK], capture_output=True, text=True, timeout=120
    )
    assert result.returncode == 0, result.stderr
    assert result.stdout.strip().splitlines()[-1] == "HEAVY:"
