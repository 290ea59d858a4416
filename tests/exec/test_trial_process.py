"""``python -m pedl.exec.trial`` outside a healthy master: it exits quickly and says why."""

from __future__ import annotations

import os
import subprocess
import sys
import time
from pathlib import Path

import pytest

from pedl.exec import EXIT_MASTER_GONE, EXIT_MODEL_DEF_ERROR, is_permanent_failure
from pedl.exec._trial_process import make_workdir
from tests.master.e2e import free_port
from tests.waits import scaled


def run_trial(env: dict[str, str], timeout: float = 60) -> subprocess.CompletedProcess[str]:
    base = {k: v for k, v in os.environ.items() if not k.startswith("PEDL_")}
    return subprocess.run(
        [sys.executable, "-m", "pedl.exec.trial"],
        env={**base, **env},
        capture_output=True,
        text=True,
        timeout=scaled(timeout),
    )


def test_without_a_master_it_exits_with_master_gone() -> None:
    result = run_trial({})
    assert result.returncode == EXIT_MASTER_GONE
    assert "PEDL_MASTER_URL" in result.stderr


def test_an_orphan_exits_at_once() -> None:
    # Its parent (this test) is not the master it names: the master is gone.
    result = run_trial({"PEDL_MASTER_PID": "1", "PEDL_MASTER_URL": "http://127.0.0.1:9"})
    assert result.returncode == EXIT_MASTER_GONE


def test_an_unreachable_master_is_given_up_on() -> None:
    started = time.monotonic()
    result = run_trial(
        {
            "PEDL_MASTER_URL": f"http://127.0.0.1:{free_port()}",
            "PEDL_TRIAL_ID": "1",
            "PEDL_TRIAL_TOKEN": "t",
            "PEDL_MASTER_GIVE_UP_SECONDS": "1",
            "PEDL_MASTER_PID": str(os.getpid()),
        }
    )
    assert result.returncode == EXIT_MASTER_GONE
    assert "has not answered for 1 s" in result.stderr
    assert time.monotonic() - started < 30


def test_only_model_definition_errors_are_permanent() -> None:
    assert is_permanent_failure(EXIT_MODEL_DEF_ERROR)
    assert not is_permanent_failure(1)
    assert not is_permanent_failure(-9)


def test_work_directories_of_processes_that_are_gone_are_removed(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    # A SIGKILLed trial process cannot remove its work directory; the next one does.
    gone = subprocess.run(
        [sys.executable, "-c", "import os; print(os.getpid())"],
        capture_output=True,
        text=True,
        check=True,
    )
    stale = tmp_path / f"pedl-trial-7-{int(gone.stdout)}-x1"
    (stale / "code").mkdir(parents=True)
    running = tmp_path / f"pedl-trial-8-{os.getppid()}-x2"
    running.mkdir()
    unknown = tmp_path / "pedl-trial-9-x3"  # not named by this version: left alone
    unknown.mkdir()
    monkeypatch.setenv("PEDL_TRIAL_WORKDIR", str(tmp_path))
    workdir = make_workdir(5)
    assert workdir.parent == tmp_path and workdir.is_dir()
    assert workdir.name.startswith(f"pedl-trial-5-{os.getpid()}-")
    assert (stale.exists(), running.exists(), unknown.exists()) == (False, True, True)
