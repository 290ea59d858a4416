"""The local resource manager with real child processes (a stand-in program for the trial)."""

from __future__ import annotations

import queue
import stat
import time
from pathlib import Path

import pytest

from pedl.master.db import Database
from pedl.master.db import experiments as experiments_repo
from pedl.master.db import logs as logs_repo
from pedl.master.orchestrator import TrialLogWriter
from pedl.master.rm import LocalResourceManager, TrialLaunch

from .helpers import create_trial, make_archive

FAKE_TRIAL = """#!/bin/sh
echo "args $*"
echo "trial $PEDL_TRIAL_ID at $PEDL_MASTER_URL token=$PEDL_TRIAL_TOKEN tf=$TF_CPP_MIN_LOG_LEVEL"
echo "to stderr" >&2
if [ "$FAKE_MODE" = sleep ]; then sleep 30; fi
exit "${FAKE_EXIT:-0}"
"""


@pytest.fixture
def fake_python(tmp_path: Path) -> str:
    path = tmp_path / "fake-python"
    path.write_text(FAKE_TRIAL)
    path.chmod(path.stat().st_mode | stat.S_IXUSR)
    return str(path)


class Recorder:
    def __init__(self) -> None:
        self.lines: dict[int, list[tuple[str, str]]] = {}
        self.exits: queue.Queue[tuple[int, int]] = queue.Queue()

    def sink(self, trial_id: int, lines: object) -> None:
        self.lines.setdefault(trial_id, []).extend(lines)  # type: ignore[arg-type]

    def on_exit(self, trial_id: int, code: int) -> None:
        self.exits.put((trial_id, code))


def launch(trial_id: int, **env: str) -> TrialLaunch:
    return TrialLaunch(trial_id, "http://127.0.0.1:1", f"tok{trial_id}", 1, env)


def test_runs_children_ships_output_and_reports_exits(fake_python: str) -> None:
    rec = Recorder()
    rm = LocalResourceManager(
        cpu_slots=3, on_exit=rec.on_exit, log_sink=rec.sink, gpus=[], python=fake_python
    )
    assert rm.total_slots == 3 and not rm.uses_gpus
    rm.start(launch(1))
    rm.start(launch(2, FAKE_EXIT="7"))
    exits = {rec.exits.get(timeout=20), rec.exits.get(timeout=20)}
    assert exits == {(1, 0), (2, 7)}
    assert rm.running() == set()
    out = rec.lines[1]
    assert ("stdout", "args -m pedl.exec.trial") in out
    assert ("stdout", "trial 1 at http://127.0.0.1:1 token=tok1 tf=2") in out
    assert ("stderr", "to stderr") in out


def test_kill_takes_the_process_group_down_now(fake_python: str) -> None:
    rec = Recorder()
    rm = LocalResourceManager(
        cpu_slots=1, on_exit=rec.on_exit, log_sink=rec.sink, gpus=[], python=fake_python
    )
    rm.start(launch(5, FAKE_MODE="sleep"))
    with pytest.raises(RuntimeError, match="already running"):
        rm.start(launch(5))
    time.sleep(0.3)
    assert rm.running() == {5}
    started = time.monotonic()
    rm.kill(5)
    assert rec.exits.get(timeout=10) == (5, -9)
    assert time.monotonic() - started < 5
    rm.kill(5)  # no-op once gone


def test_gpu_slots_are_handed_out_and_returned(fake_python: str) -> None:
    rec = Recorder()
    rm = LocalResourceManager(
        cpu_slots=8, on_exit=rec.on_exit, log_sink=rec.sink, gpus=["0", "1"], python=fake_python
    )
    assert rm.total_slots == 2 and rm.uses_gpus
    rm.start(TrialLaunch(1, "http://x", "t", 2, {"FAKE_MODE": "sleep"}))
    with pytest.raises(RuntimeError, match="needs 1 GPUs, 0 are free"):
        rm.start(TrialLaunch(2, "http://x", "t", 1))
    rm.shutdown()
    assert rec.exits.get(timeout=10) == (1, -9)
    rm.start(TrialLaunch(3, "http://x", "t", 1))
    assert rec.exits.get(timeout=10) == (3, 0)


def test_log_writer_numbers_continue_across_writers(tmp_path: Path) -> None:
    database = Database(f"sqlite:///{tmp_path / 'pedl.db'}")
    database.upgrade()
    with database.session(write=True) as session:
        experiment = experiments_repo.create_experiment(
            session, config={}, config_text="", model_definition=make_archive(), owner="me"
        )
    trial_id, _ = create_trial(database, experiment.id)
    TrialLogWriter(database).write(trial_id, [("stdout", "a"), ("stderr", "b")])
    TrialLogWriter(database).write(trial_id, [("master", "c")])  # e.g. after a restart
    with database.session() as session:
        rows = logs_repo.list_logs(session, trial_id)
    assert [(r.seq, r.stream, r.message) for r in rows] == [
        (0, "stdout", "a"),
        (1, "stderr", "b"),
        (2, "master", "c"),
    ]
    database.dispose()
