"""Running ``pedl`` in local mode as a real process, for the fault tests."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

from tests.waits import scaled

MODEL_DIR = Path(__file__).parent / "resume_model"


def pedl_command(*args: str) -> list[str]:
    """The command line of ``pedl ARGS`` in this interpreter."""
    return [sys.executable, "-m", "pedl", *args]


def pedl_env(env: dict[str, str] | None = None) -> dict[str, str]:
    """This process's environment, TensorFlow's C++ chatter off, plus ``env``."""
    return {**os.environ, "TF_CPP_MIN_LOG_LEVEL": "2", **(env or {})}


def pedl(
    *args: str, cwd: Path, env: dict[str, str] | None = None
) -> subprocess.CompletedProcess[str]:
    """Run ``pedl ARGS`` to its end (5 minutes at most) and return what it did."""
    return subprocess.run(
        pedl_command(*args),
        cwd=cwd,
        env=pedl_env(env),
        capture_output=True,
        text=True,
        timeout=scaled(300),
    )
