"""``make demo-stop`` (issue 24, item 6): it stops the master whose pid ``make demo`` kept in
``PEDL_DEMO_HOME`` (default ``.pedl-demo``), and says so when there is none."""

from __future__ import annotations

import os
import signal
import subprocess
from pathlib import Path

from tests.waits import scaled

ROOT = Path(__file__).resolve().parent.parent


def _demo_stop(home: Path) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        ["make", "--no-print-directory", "-s", "demo-stop"],
        cwd=ROOT,
        env={**os.environ, "PEDL_DEMO_HOME": str(home)},
        capture_output=True,
        text=True,
        timeout=scaled(60),
        check=False,
    )


def test_demo_stop_stops_the_master_of_pedl_demo_home(tmp_path: Path) -> None:
    master = subprocess.Popen(["sleep", "300"])  # stands for the demo's master process
    try:
        (tmp_path / "master.pid").write_text(f"{master.pid}\n")
        stopped = _demo_stop(tmp_path)
        assert stopped.returncode == 0, stopped.stderr
        assert f"Stopped the demo master (pid {master.pid})" in stopped.stdout
        assert master.wait(timeout=scaled(30)) == -signal.SIGTERM
        assert not (tmp_path / "master.pid").exists()
    finally:
        master.kill()
        master.wait()
    again = _demo_stop(tmp_path)
    assert again.returncode == 0
    assert f"No demo master to stop ({tmp_path}/master.pid is missing)" in again.stdout
