"""The local resource manager with real child processes (a stand-in program for the trial)."""

from __future__ import annotations

import os
import queue
import stat
import sys
import time
from pathlib import Path
from typing import Any

import pytest

from pedl.db import Database
from pedl.db import experiments as experiments_repo
from pedl.db import logs as logs_repo
from pedl.master.orchestrator import TrialLogWriter
from pedl.master.rm import LocalResourceManager, TrialLaunch
from tests.waits import scaled

from .helpers import create_trial, make_archive

FAKE_TRIAL = """#!/bin/bash
echo "args $*"
read -r token <&"$PEDL_TRIAL_TOKEN_FD"
echo "trial $PEDL_TRIAL_ID at $PEDL_MASTER_URL token=$token tf=$TF_CPP_MIN_LOG_LEVEL"
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

    def sink(self, trial_id: int, lines: list[tuple[str, str, int | None]]) -> None:
        # (stream, line); the rank (None for one-process trials) is checked elsewhere
        self.lines.setdefault(trial_id, []).extend((s, m) for s, m, _rank in lines)

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
    exits = {rec.exits.get(timeout=scaled(20)), rec.exits.get(timeout=scaled(20))}
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
    assert rec.exits.get(timeout=scaled(10)) == (5, -9)
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
    assert rec.exits.get(timeout=scaled(10)) == (1, -9)
    rm.start(TrialLaunch(3, "http://x", "t", 1))
    assert rec.exits.get(timeout=scaled(10)) == (3, 0)


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


FAKE_WORKER = '''#!{python}
"""Stands in for python: "-m pedl.exec.worker FD" speaks the warm-worker protocol (no TensorFlow).
Trials listed in FAKE_FAIL exit the worker with status 1; those in FAKE_SLEEP run for 30 s.
Each worker appends its pid to the file FAKE_STARTS names; with FAKE_EXIT_AT_START it exits."""
import json, os, socket, sys, time

assert sys.argv[1:3] == ["-m", "pedl.exec.worker"], sys.argv
control = socket.socket(fileno=int(sys.argv[3]))
if os.environ.get("FAKE_STARTS"):
    with open(os.environ["FAKE_STARTS"], "a") as starts:
        starts.write(f"{{os.getpid()}}\\n")
if os.environ.get("FAKE_EXIT_AT_START"):
    sys.exit(3)
print("worker started", flush=True)
while True:
    data, fds, _, _ = socket.recv_fds(control, 65536, 2)
    if not data:
        sys.exit(0)
    trial = json.loads(data)["trial_id"]
    os.write(fds[0], f"trial {{trial}} in {{os.getpid()}}\\n".encode())
    os.write(fds[1], f"stderr of trial {{trial}}\\n".encode())
    if str(trial) in os.environ.get("FAKE_SLEEP", "").split(","):
        time.sleep(30)
    for fd in fds:
        os.close(fd)
    if str(trial) in os.environ.get("FAKE_FAIL", "").split(","):
        sys.exit(1)
    control.send(json.dumps({{"trial_id": trial, "returncode": 0}}).encode())
'''


@pytest.fixture
def fake_worker(tmp_path: Path) -> str:
    path = tmp_path / "fake-worker-python"
    path.write_text(FAKE_WORKER.format(python=sys.executable))
    path.chmod(path.stat().st_mode | stat.S_IXUSR)
    return str(path)


def warm_rm(rec: Recorder, python: str, **kwargs: Any) -> LocalResourceManager:
    return LocalResourceManager(
        cpu_slots=kwargs.pop("cpu_slots", 1),
        on_exit=rec.on_exit,
        log_sink=rec.sink,
        gpus=[],
        python=python,
        reuse_workers=True,
        **kwargs,
    )


def run(
    rm: LocalResourceManager, rec: Recorder, trial_id: int, experiment_id: int, **env: str
) -> tuple[int, int]:
    """Start a trial of the experiment and wait for its exit: its status, its worker's pid."""
    rm.start(TrialLaunch(trial_id, "http://x", f"tok{trial_id}", 1, env, experiment_id))
    exited = rec.exits.get(timeout=scaled(20))
    assert exited[0] == trial_id
    pids = [
        m.split(" in ")[1] for s, m in rec.lines[trial_id] if m.startswith(f"trial {trial_id} in ")
    ]
    return exited[1], int(pids[0])


def gone(pid: int) -> bool:
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return True
    return False


def test_an_experiment_s_trials_share_a_warm_worker_and_keep_their_own_logs(
    fake_worker: str,
) -> None:
    rec = Recorder()
    rm = warm_rm(rec, fake_worker)
    try:
        assert run(rm, rec, 1, 7)[0] == 0
        status, pid = run(rm, rec, 2, 7)
        assert (status, pid) == (0, run(rm, rec, 3, 7)[1])
        assert rec.lines[1][0] == (
            "master",
            f"[master] the trial runs in a new warm worker process {pid}",
        )
        assert rec.lines[3][0] == (
            "master",
            f"[master] the trial runs in the warm worker process {pid}, which ran 2 earlier "
            "trial(s) of this experiment",
        )
        for trial_id in (1, 2, 3):
            assert sorted(rec.lines[trial_id][1:]) == [
                ("stderr", f"stderr of trial {trial_id}"),
                ("stdout", f"trial {trial_id} in {pid}"),
            ]
        assert not any("worker started" in m for lines in rec.lines.values() for _, m in lines)
    finally:
        rm.shutdown()
    assert gone(pid)


def test_another_experiment_or_environment_gets_another_worker(fake_worker: str) -> None:
    rec = Recorder()
    rm = warm_rm(rec, fake_worker)
    try:
        first = run(rm, rec, 1, 7)[1]
        second = run(rm, rec, 2, 8)[1]
        assert second != first
        assert gone(first)  # one slot: the idle worker of experiment 7 made room
        third = run(rm, rec, 3, 8, OTHER="1")[1]
        assert third not in (first, second)
    finally:
        rm.shutdown()


def test_a_worker_whose_trial_failed_or_was_killed_is_not_reused(fake_worker: str) -> None:
    rec = Recorder()
    rm = warm_rm(rec, fake_worker)
    env = {"FAKE_FAIL": "2", "FAKE_SLEEP": "4"}
    try:
        first = run(rm, rec, 1, 7, **env)[1]
        assert run(rm, rec, 2, 7, **env) == (1, first)
        third = run(rm, rec, 3, 7, **env)[1]
        assert third != first
        rm.start(TrialLaunch(4, "http://x", "tok4", 1, env, 7))
        time.sleep(0.5)
        rm.kill(4)
        assert rec.exits.get(timeout=scaled(10)) == (4, -9)
        assert gone(third)
        assert run(rm, rec, 5, 7, **env)[1] != third
    finally:
        rm.shutdown()


def test_idle_workers_are_retired(fake_worker: str) -> None:
    rec = Recorder()
    rm = warm_rm(rec, fake_worker, worker_idle_seconds=0.2)
    try:
        pid = run(rm, rec, 1, 7)[1]
        deadline = time.monotonic() + scaled(10)
        while not gone(pid):
            assert time.monotonic() < deadline
            time.sleep(0.05)
        assert run(rm, rec, 2, 7)[1] != pid
    finally:
        rm.shutdown()


@pytest.fixture
def starts(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    """The file every fake worker started from now on appends its pid to."""
    path = tmp_path / "starts"
    monkeypatch.setenv("FAKE_STARTS", str(path))
    return path


def started(path: Path) -> list[int]:
    """The pids of the fake workers started so far, in order."""
    return [int(line) for line in path.read_text().split()] if path.exists() else []


def wait_until(condition: Any, what: str, timeout: float = 10) -> None:
    deadline = time.monotonic() + scaled(timeout)
    while not condition():
        assert time.monotonic() < deadline, what
        time.sleep(0.05)


def test_spare_workers_start_ahead_and_serve_first_trials_of_their_environment_only(
    fake_worker: str, starts: Path
) -> None:
    rec = Recorder()
    rm = warm_rm(rec, fake_worker, cpu_slots=2, spare_workers=2, worker_idle_seconds=0.3)
    try:
        rm.prepare("http://x")
        wait_until(lambda: len(started(starts)) == 2, "two spares start before any trial")
        spares = started(starts)
        # A trial of an experiment without environment variables runs in a spare.
        status, pid = run(rm, rec, 1, 7)
        assert status == 0 and pid in spares
        assert rec.lines[1][0] == (
            "master",
            f"[master] the trial runs in the spare warm worker process {pid}, started before "
            "it was needed",
        )
        # One with its own variables does not: a spare gives way to its new worker.
        status, other = run(rm, rec, 2, 8, OTHER="1")
        assert status == 0 and other not in spares
        assert rec.lines[2][0] == (
            "master",
            f"[master] the trial runs in a new warm worker process {other}",
        )
        # Both workers retire once idle; two new spares take their slots.
        wait_until(lambda: gone(pid) and gone(other), "idle workers retire")
        wait_until(lambda: len(started(starts)) == 5, "the spares are topped up")
        time.sleep(1.0)  # spares are not retired for being idle, nor started beyond need
        fresh = started(starts)[3:]
        assert len(started(starts)) == 5 and not any(gone(p) for p in fresh)
    finally:
        rm.shutdown()
    assert all(gone(p) for p in started(starts))


def test_a_spare_that_exits_by_itself_stops_the_spares(
    fake_worker: str,
    starts: Path,
    monkeypatch: pytest.MonkeyPatch,
    caplog: pytest.LogCaptureFixture,
) -> None:
    monkeypatch.setenv("FAKE_EXIT_AT_START", "1")
    rec = Recorder()
    rm = warm_rm(rec, fake_worker, cpu_slots=1, spare_workers=1, worker_idle_seconds=0.2)
    try:
        rm.prepare("http://x")
        wait_until(lambda: "exited by itself" in caplog.text, "the master's log says why")
        time.sleep(1.0)  # the housekeeping ran ~10 more times: no new spare
        assert len(started(starts)) == 1
        assert "(exit status 3)" in caplog.text
    finally:
        rm.shutdown()


def test_no_spares_without_reuse_or_on_gpus(fake_worker: str, starts: Path) -> None:
    rec = Recorder()
    rms = [
        LocalResourceManager(
            cpu_slots=1,
            on_exit=rec.on_exit,
            log_sink=rec.sink,
            gpus=[],
            python=fake_worker,
            reuse_workers=False,
            spare_workers=1,
        ),
        LocalResourceManager(
            cpu_slots=1,
            on_exit=rec.on_exit,
            log_sink=rec.sink,
            gpus=["0"],
            python=fake_worker,
            reuse_workers=True,
            spare_workers=1,
        ),
    ]
    try:
        for rm in rms:
            rm.prepare("http://x")
        time.sleep(1.0)
        assert started(starts) == []
    finally:
        for rm in rms:
            rm.shutdown()


GANG_FAKE = """#!/bin/bash
read -r token <&"$PEDL_TRIAL_TOKEN_FD"
printf x >&"$PEDL_HEARTBEAT_FD"
echo "rank=$PEDL_RANK size=$PEDL_SIZE gpus=$CUDA_VISIBLE_DEVICES token=$token"
code="EXIT_$PEDL_RANK"
exit "${!code:-0}"
"""


def test_a_multi_worker_trial_gives_each_worker_one_gpu_of_its_own(tmp_path: Path) -> None:
    fake = tmp_path / "gang-python"
    fake.write_text(GANG_FAKE)
    fake.chmod(0o755)
    rec = Recorder()
    rm = LocalResourceManager(
        cpu_slots=1, on_exit=rec.on_exit, log_sink=rec.sink, gpus=["0", "1", "2"], python=str(fake)
    )
    try:
        with pytest.raises(RuntimeError, match="needs 4 GPUs, 3 are free"):
            rm.start(TrialLaunch(9, "http://127.0.0.1:1", "tok9", 4, {}))
        rm.start(TrialLaunch(7, "http://127.0.0.1:1", "tok7", 2, {}))
        assert rec.exits.get(timeout=scaled(20)) == (7, 0), rec.lines
        out = sorted(m for s, m in rec.lines[7] if s == "stdout")
        assert out == [
            "rank=0 size=2 gpus=0 token=tok7",
            "rank=1 size=2 gpus=1 token=tok7",
        ]
        rm.start(TrialLaunch(8, "http://127.0.0.1:1", "tok8", 3, {}))  # all GPUs free again
        assert rec.exits.get(timeout=scaled(20)) == (8, 0), rec.lines
    finally:
        rm.shutdown()


def test_a_failed_worker_is_the_attempt_s_exit_and_its_cause(tmp_path: Path) -> None:
    fake = tmp_path / "gang-python"
    fake.write_text(GANG_FAKE)
    fake.chmod(0o755)
    rec = Recorder()
    rm = LocalResourceManager(
        cpu_slots=2, on_exit=rec.on_exit, log_sink=rec.sink, gpus=[], python=str(fake)
    )
    try:
        rm.start(TrialLaunch(3, "http://127.0.0.1:1", "tok3", 2, {"EXIT_1": "3"}))
        assert rec.exits.get(timeout=scaled(20)) == (3, 3), rec.lines
        assert rm.exit_cause(3) == "rank 1 failed (exit code 3)"
        assert rm.exit_cause(3) is None  # once
        assert any("the attempt ended: rank 1 failed" in m for _s, m in rec.lines[3])
        assert {w.rank: w.exit_code for w in rm.workers(3)}[1] == 3
    finally:
        rm.shutdown()
