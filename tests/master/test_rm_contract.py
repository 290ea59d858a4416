"""One contract for every resource manager, run over ``local`` and ``ray`` alike: a trial
process is launched with the trial's environment and token, its output lines reach the log
sink, its exit (0, an error code, a signal) reaches the exit handler once, kill ends it at once,
and the slots are counted. A stand-in program plays the trial (``PEDL_TRIAL_PYTHON``); the
``ray`` runs use a Ray cluster of this machine owned by the module (see
:mod:`tests.ray.cluster`)."""

from __future__ import annotations

import queue
import stat
import time
from collections.abc import Iterator
from typing import Any

import pytest

from pedl.master.rm import LocalResourceManager, ResourceManager, TrialLaunch
from tests.waits import scaled

FAKE_TRIAL = """#!/bin/bash
read -r token <&"$PEDL_TRIAL_TOKEN_FD"
echo "trial $PEDL_TRIAL_ID at $PEDL_MASTER_URL token=$token args=$*"
echo "to stderr" >&2
echo "rank ${PEDL_RANK:-none}/${PEDL_SIZE:-none} heartbeat=${PEDL_HEARTBEAT_FD:+yes}"
case "$FAKE_MODE" in
  sleep) echo started; sleep 60 ;;
  signal) kill -TERM $$ ;;
  rank1fails) if [ "$PEDL_RANK" = 1 ]; then exit 3; fi; sleep 60 ;;
esac
exit "${FAKE_EXIT:-0}"
"""


class Recorder:
    """The log sink and exit handler a resource manager is given."""

    def __init__(self) -> None:
        self.lines: dict[int, list[tuple[Any, ...]]] = {}
        self.exits: queue.Queue[tuple[int, int]] = queue.Queue()

    def sink(self, trial_id: int, lines: Any) -> None:
        self.lines.setdefault(trial_id, []).extend(tuple(line) for line in lines)

    def on_exit(self, trial_id: int, code: int) -> None:
        self.exits.put((trial_id, code))

    def texts(self, trial_id: int, stream: str) -> list[str]:
        return [line[1] for line in self.lines.get(trial_id, []) if line[0] == stream]

    def wait_for(self, trial_id: int, text: str, timeout: float = 60) -> None:
        deadline = time.monotonic() + scaled(timeout)
        while text not in self.texts(trial_id, "stdout"):
            assert time.monotonic() < deadline, f"no {text!r} from trial {trial_id}"
            time.sleep(0.1)


@pytest.fixture(scope="module")
def fake_python(tmp_path_factory: pytest.TempPathFactory) -> str:
    path = tmp_path_factory.mktemp("fake") / "fake-python"
    path.write_text(FAKE_TRIAL)
    path.chmod(path.stat().st_mode | stat.S_IXUSR | stat.S_IRGRP | stat.S_IXGRP)
    return str(path)


@pytest.fixture(scope="module")
def ray_address(tmp_path_factory: pytest.TempPathFactory) -> Iterator[str]:
    from tests.ray.cluster import ray_cluster

    with ray_cluster(tmp_path_factory.mktemp("raycluster")) as cluster:
        yield cluster.address


@pytest.fixture(params=["local", "ray"])
def made(
    request: pytest.FixtureRequest, fake_python: str
) -> Iterator[tuple[ResourceManager, Recorder]]:
    rec = Recorder()
    rm: ResourceManager
    if request.param == "local":
        rm = LocalResourceManager(cpu_slots=2, on_exit=rec.on_exit, log_sink=rec.sink, gpus=[])
    else:
        from pedl.master.rm import RayResourceManager

        address = request.getfixturevalue("ray_address")
        rm = RayResourceManager(address=address, on_exit=rec.on_exit, log_sink=rec.sink)
        assert rm.wait_connected(60)
        deadline = time.monotonic() + scaled(30)
        while rm.total_slots < 2 and time.monotonic() < deadline:
            time.sleep(0.2)
    try:
        yield rm, rec
    finally:
        rm.shutdown()


def launch(trial_id: int, fake_python: str, slots: int = 1, **env: str) -> TrialLaunch:
    return TrialLaunch(
        trial_id,
        "http://127.0.0.1:1",
        f"token-{trial_id}",
        slots,
        {"PEDL_TRIAL_PYTHON": fake_python, **env},
    )


def test_slots_are_counted(made: tuple[ResourceManager, Recorder]) -> None:
    rm, _ = made
    assert rm.total_slots == 2
    assert not rm.uses_gpus
    assert rm.unavailable() is None
    assert rm.running() == set()


def test_each_outcome_reaches_the_exit_handler_once_after_the_output(
    made: tuple[ResourceManager, Recorder], fake_python: str
) -> None:
    rm, rec = made
    rm.start(launch(1, fake_python))
    rm.start(launch(2, fake_python, FAKE_EXIT="7"))
    first = {rec.exits.get(timeout=scaled(90)), rec.exits.get(timeout=scaled(90))}
    rm.start(launch(3, fake_python, FAKE_MODE="signal"))
    assert rec.exits.get(timeout=scaled(90)) == (3, -15)
    assert first == {(1, 0), (2, 7)}
    assert rec.exits.empty()
    assert rm.running() == set()
    for trial_id in (1, 2, 3):
        assert rec.texts(trial_id, "stdout")[0] == (
            f"trial {trial_id} at http://127.0.0.1:1 token=token-{trial_id} args=-m pedl.exec.trial"
        )
        assert rec.texts(trial_id, "stderr") == ["to stderr"]
    with pytest.raises(RuntimeError, match="already running"):
        rm.start(launch(4, fake_python, FAKE_MODE="sleep"))
        rm.start(launch(4, fake_python, FAKE_MODE="sleep"))
    rm.kill(4)
    assert rec.exits.get(timeout=scaled(60)) == (4, -9)


def test_kill_ends_the_trial_now(made: tuple[ResourceManager, Recorder], fake_python: str) -> None:
    rm, rec = made
    rm.start(launch(5, fake_python, FAKE_MODE="sleep"))
    assert rm.running() == {5}
    rec.wait_for(5, "started")
    began = time.monotonic()
    rm.kill(5)
    assert rec.exits.get(timeout=scaled(30)) == (5, -9)
    assert time.monotonic() - began < 20
    assert rm.running() == set()
    rm.kill(5)  # a no-op once it ended
    assert rec.exits.empty()


def test_a_gang_of_two_workers_starts_together_and_ends_as_one(
    made: tuple[ResourceManager, Recorder], fake_python: str
) -> None:
    rm, rec = made
    rm.start(launch(11, fake_python, slots=2))
    assert rec.exits.get(timeout=scaled(90)) == (11, 0)
    by_rank = {
        rank: [(stream, text) for stream, text, rank_of in rec.lines[11] if rank_of == rank]
        for rank in (0, 1)
    }
    for rank, lines in by_rank.items():
        # Each stream keeps its order; how stdout and stderr interleave is not defined (on
        # Ray the two are read apart).
        stdout = [text for stream, text in lines if stream == "stdout"]
        assert stdout[0] == (
            "trial 11 at http://127.0.0.1:1 token=token-11 args=-m pedl.exec.trial"
        ), lines
        assert f"rank {rank}/2 heartbeat=yes" in stdout
        assert ("stderr", "to stderr") in lines
    # a worker that fails ends the attempt with its status; the chief is stopped
    rm.start(launch(12, fake_python, slots=2, FAKE_MODE="rank1fails"))
    assert rec.exits.get(timeout=scaled(90)) == (12, 3)
    said = " ".join(text for stream, text, *_ in rec.lines[12] if stream == "master")
    assert "rank 1 failed (exit code 3)" in said, rec.lines[12]
    assert rm.running() == set()
