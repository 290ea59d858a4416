"""What a local run prints on the terminal (issue 24, item 6), as a user's shell gets it (a
real ``pedl`` process, stdout and stderr): no Alembic migration lines, no TensorFlow
absl/oneDNN start-up lines, a failure's message once; all of them in the run's
``experiment.log``, the traceback too."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

from pedl._tf_noise import is_tf_noise
from tests.failure_cases import CASES, CONFIG, MAX_RESTARTS


def test_a_failed_local_run_says_its_error_once_and_no_start_up_noise(tmp_path: Path) -> None:
    case = next(c for c in CASES if c.name == "build_model")
    model = case.write(tmp_path / "model")
    config = tmp_path / "failing.yaml"
    config.write_text(
        CONFIG.format(name="noise", units="1", searcher="grid", extra="", max_restarts=MAX_RESTARTS)
    )
    # Every C++ line TensorFlow has (0): what it says at start-up depends on the CPU (at the
    # default level, oneDNN's line only where its optimizations are on, nothing elsewhere).
    env = {**os.environ, "TF_CPP_MIN_LOG_LEVEL": "0"}
    done = subprocess.run(
        [sys.executable, "-m", "pedl", "experiment", "create", "--local", str(config),
         str(model), "--output-dir", str(tmp_path / "out")],
        env=env, capture_output=True, text=True, timeout=300, check=False,
    )  # fmt: skip
    terminal = done.stdout + done.stderr
    assert done.returncode == 1, terminal
    assert terminal.count("boom in build_model") == 1, terminal
    assert f"ValueError: boom in build_model ({case.location()})" in terminal
    startup = subprocess.run(
        [sys.executable, "-c", "import tensorflow"],
        env=env, capture_output=True, text=True, timeout=120, check=True,
    ).stderr  # fmt: skip
    said = [line.rpartition("] ")[2] for line in startup.splitlines() if is_tf_noise(line)]
    assert said, startup  # absl's notice at least, on any machine
    for noise in ("alembic", "Running upgrade", "Traceback", *said):
        assert noise not in terminal, (noise, terminal)
    log = tmp_path / "out" / "exp-1" / "experiment.log"
    assert f"Log (tracebacks, TensorFlow's start-up, migrations): {log}" in terminal
    written = log.read_text()
    for kept in ("Running upgrade", "Traceback (most recent call", *said):
        assert kept in written, kept
    assert written.count("Traceback (most recent call last)") == case.attempts
