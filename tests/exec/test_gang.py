"""The multi-worker launcher (pedl.exec._gang): the environment of each rank (a pure
function, property-tested) and the exit rules of a gang of real processes."""

from __future__ import annotations

import json
import os
import signal
import sys
import time
from collections import defaultdict
from pathlib import Path

import pytest
from click.testing import CliRunner
from hypothesis import given, settings
from hypothesis import strategies as st
from pydantic import ValidationError

from pedl.cli import cli
from pedl.core import DistributedContext
from pedl.exec import Gang, GangPorts, free_ports, gang_environments, pick_ports
from pedl.master import MasterSettings
from tests.waits import scaled

# A worker stand-in: beats its heartbeat like pedl.exec does, prints its rank, then behaves
# as GANG_MODE says for its rank.
WORKER = """
import os, signal, sys, threading, time
fd = int(os.environ["PEDL_HEARTBEAT_FD"])
def beat():
    while True:
        try:
            os.write(fd, b"x")
        except OSError:
            return
        time.sleep(0.2)
threading.Thread(target=beat, daemon=True).start()
rank = int(os.environ["PEDL_RANK"])
print(f"hello from {rank}", flush=True)
print(f"err {rank}", file=sys.stderr, flush=True)
mode = os.environ.get(f"MODE_{rank}", "sleep")
if mode == "sleep":
    time.sleep(60)
elif mode.startswith("exit"):
    time.sleep(0.3)
    sys.exit(int(mode[4:]))
elif mode == "stop":
    time.sleep(0.3)
    os.kill(os.getpid(), signal.SIGSTOP)
    time.sleep(60)
"""


@settings(max_examples=60)
@given(
    size=st.integers(1, 8),
    base=st.integers(1024, 60000),
    gpus=st.booleans(),
    timeout=st.one_of(st.none(), st.floats(1, 1e4)),
)
def test_each_rank_gets_its_own_consistent_environment(
    size: int, base: int, gpus: bool, timeout: float | None
) -> None:
    ports = GangPorts(base, base + 1, tuple(range(base + 2, base + 2 + size)))
    gpu_ids = [[str(rank)] for rank in range(size)] if gpus else None
    envs = gang_environments(size, ports, gpus=gpu_ids, dist_timeout=timeout)
    assert len(envs) == size
    clusters = set()
    for rank, env in enumerate(envs):
        context = DistributedContext.from_env(env)
        assert (context.get_rank(), context.get_size()) == (rank, size)
        assert (context.get_local_rank(), context.get_local_size()) == (rank, size)
        assert context.get_cross_size() == 1 and context.chief_ip == "127.0.0.1"
        assert (context.pub_port, context.pull_port) == (base, base + 1)
        assert context.timeout == timeout or (
            timeout is None and context.timeout == DistributedContext().timeout
        )
        tf_config = json.loads(env["TF_CONFIG"])
        assert tf_config["task"] == {"type": "worker", "index": rank}
        clusters.add(json.dumps(tf_config["cluster"]))
        assert env["CUDA_VISIBLE_DEVICES"] == (str(rank) if gpus else "")
    (cluster,) = clusters
    workers = json.loads(cluster)["worker"]
    assert workers == [f"127.0.0.1:{port}" for port in ports.tf_ports]


def test_inconsistent_ports_are_refused() -> None:
    with pytest.raises(ValueError, match="distinct"):
        gang_environments(2, GangPorts(5000, 5001, (5001, 5002)))
    with pytest.raises(ValueError, match="2 TF_CONFIG ports"):
        gang_environments(2, GangPorts(5000, 5001, (5002,)))


def test_picked_ports_are_distinct_and_free() -> None:
    ports = pick_ports(4)
    every = [ports.pub_port, ports.pull_port, *ports.tf_ports]
    assert len(set(every)) == 6
    assert len(set(free_ports(16))) == 16


class _Output:
    def __init__(self) -> None:
        self.lines: dict[int, list[tuple[str, str]]] = defaultdict(list)
        self.events: list[str] = []

    def on_output(self, rank: int, stream: str, raw: bytes | None) -> None:
        if raw is not None:
            self.lines[rank].append((stream, raw.decode().strip()))

    def on_event(self, line: str) -> None:
        self.events.append(line)


def _start(
    tmp_path: Path, modes: dict[int, str], size: int = 2, **gang_args: float
) -> tuple[Gang, _Output]:
    script = tmp_path / "worker.py"
    script.write_text(WORKER)
    out = _Output()
    gang = Gang(on_output=out.on_output, on_event=out.on_event, **gang_args)
    envs = gang_environments(size, pick_ports(size))
    for env in envs:
        env.update(os.environ)
        env.update({f"MODE_{rank}": mode for rank, mode in modes.items()})
    gang.start([sys.executable, str(script)], envs)
    return gang, out


def test_a_failing_worker_ends_the_attempt_with_its_status(tmp_path: Path) -> None:
    gang, out = _start(tmp_path, {1: "exit3"}, grace_seconds=1.0)
    assert gang.wait(timeout=scaled(30)) == 3
    assert gang.failure is not None and gang.failure.rank == 1
    states = {w.rank: w for w in gang.states()}
    assert states[1].state == "exited" and states[1].exit_code == 3
    assert states[0].state == "killed" and states[0].exit_code == -signal.SIGTERM
    assert out.lines[0] == [("stdout", "hello from 0"), ("stderr", "err 0")] or sorted(
        out.lines[0]
    ) == [("stderr", "err 0"), ("stdout", "hello from 0")]
    assert ("stdout", "hello from 1") in out.lines[1]
    assert any("rank 1 failed (exit code 3)" in e for e in out.events)


def test_a_killed_chief_takes_the_others_down(tmp_path: Path) -> None:
    gang, _out = _start(tmp_path, {}, size=3, grace_seconds=1.0)
    time.sleep(0.5)
    os.kill(gang.pids[0], signal.SIGKILL)
    assert gang.wait(timeout=scaled(30)) == -signal.SIGKILL
    assert gang.failure is not None and gang.failure.rank == 0
    assert [w.state for w in gang.states()] == ["exited", "killed", "killed"]


def test_a_hung_worker_is_noticed_within_the_heartbeat_timeout(tmp_path: Path) -> None:
    started = time.monotonic()
    gang, out = _start(tmp_path, {1: "stop"}, heartbeat_timeout=1.5, grace_seconds=1.0)
    assert gang.wait(timeout=scaled(30)) == -signal.SIGKILL
    assert time.monotonic() - started < 15
    assert gang.failure is not None and gang.failure.rank == 1
    assert "rank 1" in gang.failure.reason and "hung: no heartbeat for" in gang.failure.reason
    assert any("hung" in e for e in out.events)


def test_the_chief_done_leaves_the_others_a_grace_then_stops_them(tmp_path: Path) -> None:
    started = time.monotonic()
    gang, out = _start(tmp_path, {0: "exit0"}, grace_seconds=1.0)
    assert gang.wait(timeout=scaled(30)) == 0
    assert 1.0 <= time.monotonic() - started < 15
    assert gang.failure is None
    assert [w.state for w in gang.states()] == ["exited", "killed"]
    assert any("the chief exited" in e for e in out.events)


def test_kill_stops_every_worker(tmp_path: Path) -> None:
    gang, _out = _start(tmp_path, {})
    time.sleep(0.3)
    gang.kill()
    assert gang.wait(timeout=scaled(30)) == -signal.SIGKILL
    assert all(w.state == "killed" for w in gang.states())


def test_the_heartbeat_timeout_setting(monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> None:
    assert MasterSettings(home=tmp_path).worker_heartbeat_timeout == 60.0
    monkeypatch.setenv("PEDL_WORKER_HEARTBEAT_TIMEOUT", "7.5")
    assert MasterSettings(home=tmp_path).worker_heartbeat_timeout == 7.5
    with pytest.raises(ValidationError, match="worker_heartbeat_timeout"):
        MasterSettings(home=tmp_path, worker_heartbeat_timeout=0)
    result = CliRunner().invoke(cli, ["master", "--help"])
    assert "--worker-heartbeat-timeout" in result.output
    bad = CliRunner().invoke(cli, ["master", "--worker-heartbeat-timeout", "0"])
    assert bad.exit_code != 0 and "worker-heartbeat-timeout" in bad.output
