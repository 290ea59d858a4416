"""DistributedContext between real worker processes (ZeroMQ on loopback and Unix sockets).

Every multi-process test takes free ports from the OS, so tests run in parallel; each worker
is a spawned process that reports what its collectives returned (or raised) on a queue.
"""

from __future__ import annotations

import dataclasses
import json
import multiprocessing
import os
import queue
import re
import threading
import time
from collections.abc import Callable
from typing import Any

import numpy as np
import pytest
import zmq
from hypothesis import given
from hypothesis import strategies as st

from pedl import core
from pedl.exec import free_ports
from tests.waits import scaled


@dataclasses.dataclass(frozen=True)
class Point:
    x: int
    y: int


def objects() -> dict[str, Any]:
    """What the chief broadcasts: objects of several kinds, all picklable."""
    return {
        "list": [1, 2.5, "three", None],
        "tuple": (True, b"\x00\xff"),
        "set": {1, 2, 3},
        "point": Point(1, 2),
        "array": np.arange(6, dtype="float32").reshape(2, 3),
        "large": b"x" * 2_000_000,
    }


def collectives(distributed: core.DistributedContext) -> dict[str, Any]:
    r = distributed.get_rank()
    results = {
        "gather": distributed.gather(r * 10),
        "gather_local": distributed.gather_local(("local", distributed.get_local_rank())),
        "allgather": distributed.allgather({"rank": r, "square": r * r}),
        "allgather_local": distributed.allgather_local(r),
        "broadcast": distributed.broadcast(objects() if distributed.is_chief else None),
        "broadcast_local": distributed.broadcast_local(
            ("from", r) if distributed.get_local_rank() == 0 else None
        ),
        # Many collectives in a row stay in step.
        "sequence": [distributed.allgather(i * 100 + r) for i in range(20)],
        "after": distributed.gather(None),
    }
    return results


def run_collectives(env: dict[str, str], _ready: Any) -> dict[str, Any]:
    os.environ.update(env)
    with core.DistributedContext.from_env() as distributed:
        return collectives(distributed)


def run_layout(kwargs: dict[str, Any], _ready: Any) -> dict[str, Any]:
    with core.DistributedContext(**kwargs) as distributed:
        return collectives(distributed)


def run_until_a_peer_dies(kwargs: dict[str, Any], ready: Any) -> dict[str, Any]:
    """Rank 2 dies once connected; the others' allgather must fail with a clear error."""
    distributed = core.DistributedContext(**kwargs)
    distributed.connect()
    if distributed.get_rank() == 2:
        ready.wait()
        os._exit(3)
    ready.wait()
    try:
        distributed.allgather("never complete")
    finally:
        distributed.close()
    return {}


def worker(target: Callable[..., Any], arg: Any, ready: Any, out: Any) -> None:
    start = time.monotonic()
    try:
        out.put((arg_rank(arg), "ok", target(arg, ready), time.monotonic() - start))
    except BaseException as e:
        out.put((arg_rank(arg), type(e).__name__, str(e), time.monotonic() - start))


def arg_rank(arg: Any) -> int:
    return int(arg["PEDL_RANK"]) if "PEDL_RANK" in arg else int(arg["rank"])


def run_workers(
    target: Callable[..., Any], args: list[Any], *, wait: float = 60
) -> dict[int, tuple[str, Any, float]]:
    """Run ``target(arg, ready)`` in one process per arg; what each returned or raised
    (exception type name and message) and its seconds, by rank.

    The processes come from a fork server that imported this module once (a spawned process
    would import it again for each worker)."""
    server = multiprocessing.get_context("forkserver")
    server.set_forkserver_preload([__name__])
    out = server.Queue()
    ready = server.Barrier(len(args))
    processes = [
        server.Process(target=worker, args=(target, arg, ready, out), daemon=True) for arg in args
    ]
    for process in processes:
        process.start()
    results: dict[int, tuple[str, Any, float]] = {}
    try:
        deadline = time.monotonic() + scaled(wait)
        while time.monotonic() < deadline:
            try:
                rank, status, value, seconds = out.get(timeout=0.2)
            except queue.Empty:
                if all(process.exitcode is not None for process in processes):
                    break  # every process ended, and all they sent has been read
                continue
            results[rank] = (status, value, seconds)
    finally:
        for process in processes:
            process.join(timeout=10)
            if process.is_alive():
                process.kill()
                process.join()
        out.close()
        out.join_thread()
    return results


def check_collectives(results: dict[int, tuple[str, Any, float]], machines: list[int]) -> None:
    """``machines[rank]`` is the cross rank of each rank."""
    size = len(machines)
    for rank, (status, got, _) in results.items():
        assert status == "ok", (rank, got)
        same_machine = [r for r in range(size) if machines[r] == machines[rank]]
        local_rank = same_machine.index(rank)
        assert got["gather"] == ([r * 10 for r in range(size)] if rank == 0 else None)
        expected_local = [("local", i) for i in range(len(same_machine))]
        assert got["gather_local"] == (expected_local if local_rank == 0 else None)
        assert got["allgather"] == [{"rank": r, "square": r * r} for r in range(size)]
        assert got["allgather_local"] == same_machine
        broadcast, sent = got["broadcast"], objects()
        assert np.array_equal(broadcast.pop("array"), sent.pop("array"))
        assert broadcast == sent
        assert got["broadcast_local"] == ("from", same_machine[0])
        assert got["sequence"] == [[i * 100 + r for r in range(size)] for i in range(20)]
        assert got["after"] == ([None] * size if rank == 0 else None)


@pytest.mark.parametrize("size", [2, 3])
def test_every_collective_between_processes_on_one_machine(size: int) -> None:
    """Workers built from a launcher's variables (from_env), connecting on 127.0.0.1."""
    pub, pull = free_ports(2)
    contexts = [
        core.DistributedContext(
            rank=r, size=size, local_rank=r, local_size=size, pub_port=pub, pull_port=pull
        )
        for r in range(size)
    ]
    results = run_workers(run_collectives, [c.to_env() for c in contexts])
    assert sorted(results) == list(range(size))
    check_collectives(results, [0] * size)


@pytest.mark.parametrize(
    ("machines", "force_tcp"),
    # Two "machines" on loopback: local sizes 2 and 1 over Unix sockets, then 1 and 2 over
    # TCP (where the local chief is not the chief).
    [([0, 0, 1], False), ([0, 1, 1], True)],
)
def test_local_collectives_stay_on_their_machine(machines: list[int], force_tcp: bool) -> None:
    pub, pull = free_ports(2)
    offset = 1000  # the chief listens on pub_port + port_offset
    args = [
        {
            "rank": r,
            "size": len(machines),
            "local_rank": machines[:r].count(machines[r]),
            "local_size": machines.count(machines[r]),
            "cross_rank": machines[r],
            "cross_size": 2,
            "chief_ip": "127.0.0.1",
            "pub_port": pub - offset,
            "pull_port": pull - offset,
            "port_offset": offset,
            "force_tcp": force_tcp,
        }
        for r in range(len(machines))
    ]
    results = run_workers(run_layout, args)
    check_collectives(results, machines)


def test_a_peer_that_dies_fails_the_others_with_a_clear_error_within_the_timeout() -> None:
    """Rank 2 exits: the chief's allgather fails at once (lost connection), then rank 1,
    waiting on the chief that gave up, fails too; both well within the 30 s timeout."""
    pub, pull = free_ports(2)
    args = [
        {"rank": r, "size": 3, "local_rank": r, "local_size": 3, "pub_port": pub}
        | {"pull_port": pull, "timeout": 30.0}
        for r in range(3)
    ]
    results = run_workers(run_until_a_peer_dies, args)
    chief_status, chief_error, chief_seconds = results[0]
    assert chief_status == "DistributedError", results
    # Waiting for rank 2, and for rank 1 too if its message had not come yet.
    assert re.search(r"lost the connection to a worker .* rank\(s\) (1, )?2$", chief_error)
    worker_status, worker_error, worker_seconds = results[1]
    assert worker_status == "DistributedError", results
    assert "lost the connection to its chief" in worker_error
    assert max(chief_seconds, worker_seconds) < 30


def test_a_collective_that_a_peer_never_joins_times_out() -> None:
    """The worker is alive but calls nothing more: the chief's gather gives up at the
    timeout with a message saying whom it waited for. (Workers as threads.)

    The timeout also bounds the connection's handshake, so it scales with the machine: at a
    fixed 1 s a loaded machine's worker gave up connecting, and the chief saw it go."""
    pub, pull = free_ports(2)
    timeout = round(scaled(2.0), 1)
    kwargs = {"size": 2, "local_size": 2, "pub_port": pub, "pull_port": pull, "timeout": timeout}
    chief = core.DistributedContext(rank=0, local_rank=0, **kwargs)
    other = core.DistributedContext(rank=1, local_rank=1, **kwargs)
    failures: list[BaseException] = []

    def connect() -> None:
        try:
            other.connect()
        except BaseException as e:
            failures.append(e)

    thread = threading.Thread(target=connect)
    thread.start()
    try:
        chief.connect()
        thread.join()
        assert not failures, failures
        start = time.monotonic()
        expected = rf"no message from rank\(s\) 1 within {timeout:g} s"
        with pytest.raises(core.DistributedError, match=expected):
            chief.gather("alone")
        assert time.monotonic() - start < timeout + scaled(10)
    finally:
        thread.join()
        chief.close()
        other.close()


def test_a_worker_that_connects_the_instant_the_chief_binds_counts_as_connected(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """The worker starts first and retries its connect; the chief's process then stalls just
    after opening its ports (as a loaded machine's can), so the worker's connection is accepted
    before the chief does anything else. The chief still counts it: a collective that the
    worker then answers succeeds, where a missed "accepted" event made it a lost worker (CI,
    2026-12-01: "lost the connection to a worker" in the test above). (Workers as threads.)"""
    pub, pull = free_ports(2)
    timeout = scaled(10.0)
    kwargs = {"size": 2, "local_size": 2, "pub_port": pub, "pull_port": pull, "timeout": timeout}
    chief = core.DistributedContext(rank=0, local_rank=0, **kwargs)
    other = core.DistributedContext(rank=1, local_rank=1, **kwargs)
    bind = zmq.Socket.bind

    def bind_then_stall(socket: zmq.Socket[bytes], url: str) -> None:
        bind(socket, url)
        if url.endswith(f":{pull}"):
            time.sleep(1.0)  # the worker retries every 0.1 s: it connects meanwhile

    results: list[Any] = []

    def work() -> None:
        try:
            other.connect()
            results.append(other.gather("from rank 1"))
        except BaseException as e:
            results.append(e)

    thread = threading.Thread(target=work)
    thread.start()
    try:
        time.sleep(0.3)  # the worker's first connects are refused: nothing listens yet
        with monkeypatch.context() as patch:
            patch.setattr(zmq.Socket, "bind", bind_then_stall)
            chief.connect()
        assert chief.gather("from rank 0") == ["from rank 0", "from rank 1"]
    finally:
        thread.join()
        chief.close()
        other.close()
    assert results == [None]


def test_a_missing_peer_fails_the_startup_within_the_timeout() -> None:
    pub, pull = free_ports(2)
    kwargs = {"size": 3, "local_size": 3, "pub_port": pub, "pull_port": pull, "timeout": 0.5}
    with core.DistributedContext(rank=0, local_rank=0, **kwargs) as chief:
        with pytest.raises(core.DistributedError, match=r"rank\(s\) 1, 2 did not connect"):
            chief.broadcast("hello")
        with pytest.raises(core.DistributedError, match="closed"):
            chief.broadcast("again")
    worker = core.DistributedContext(rank=1, local_rank=1, **kwargs)
    with worker, pytest.raises(core.DistributedError, match="no answer from the chief"):
        worker.allgather(1)


def test_a_second_chief_on_the_same_ports_is_refused() -> None:
    pub, pull = free_ports(2)
    kwargs = {"size": 2, "local_size": 2, "pub_port": pub, "pull_port": pull, "timeout": 0.5}
    first = core.DistributedContext(rank=0, local_rank=0, **kwargs)
    first_error: list[BaseException] = []

    def connect_first() -> None:
        try:
            first.connect()  # no worker comes: it times out
        except BaseException as e:
            first_error.append(e)

    thread = threading.Thread(target=connect_first)
    thread.start()
    try:
        time.sleep(0.1)
        second = core.DistributedContext(rank=0, local_rank=0, **kwargs)
        with second, pytest.raises(core.DistributedError, match="port_offset"):
            second.connect()
    finally:
        thread.join()
        first.close()
    assert "did not connect" in str(first_error[0])


def test_a_single_process_context_opens_no_socket() -> None:
    distributed = core.DistributedContext.single()
    assert distributed.gather(1) == [1]
    assert distributed.allgather_local(2) == [2]
    assert distributed.broadcast(3) == 3
    distributed.close()
    assert distributed.gather_local(4) == [4]


@given(
    st.integers(1, 8).flatmap(
        lambda machines: st.tuples(
            st.lists(st.integers(1, 4), min_size=machines, max_size=machines),
            st.integers(0, 100),
        )
    ),
    st.integers(1024, 30000),
    st.integers(0, 1000),
    st.sampled_from([None, 0.25, 1800.0]),
    st.booleans(),
)
def test_to_env_and_from_env_round_trip(
    layout: tuple[list[int], int],
    port: int,
    offset: int,
    timeout: float | None,
    force_tcp: bool,
) -> None:
    local_sizes, pick = layout
    ranks = [(m, local) for m, n in enumerate(local_sizes) for local in range(n)]
    rank = pick % len(ranks)
    machine, local_rank = ranks[rank]
    original = core.DistributedContext(
        rank=rank,
        size=len(ranks),
        local_rank=local_rank,
        local_size=local_sizes[machine],
        cross_rank=machine,
        cross_size=len(local_sizes),
        chief_ip="10.1.2.3" if len(local_sizes) > 1 else None,
        pub_port=port,
        pull_port=port + 16,
        port_offset=offset,
        force_tcp=force_tcp,
        timeout=timeout,
    )
    copy = core.DistributedContext.from_env(original.to_env())
    assert vars(copy) == vars(original)
    assert json.loads(json.dumps(original.to_env())) == original.to_env()


def test_from_env_without_a_launcher_is_single() -> None:
    assert core.DistributedContext.from_env({}).get_size() == 1
    with pytest.raises(ValueError, match="PEDL_RANK"):
        core.DistributedContext.from_env({"PEDL_SIZE": "2"})


def test_the_constructor_checks_the_layout() -> None:
    with pytest.raises(ValueError, match="local_size must equal size"):
        core.DistributedContext(rank=1, size=2)
    with pytest.raises(ValueError, match="the chief"):
        core.DistributedContext(
            rank=0, size=2, local_rank=1, local_size=2, cross_size=2, chief_ip="h"
        )
    with pytest.raises(ValueError, match="timeout"):
        core.DistributedContext(timeout=0)
    with pytest.raises(ValueError, match="differ"):
        core.DistributedContext(pub_port=5000, pull_port=5000)


class FakeHorovod:
    """What from_horovod reads of the ``hvd`` module it is given."""

    def rank(self) -> int:
        return 3

    def size(self) -> int:
        return 4

    def local_rank(self) -> int:
        return 1

    def local_size(self) -> int:
        return 2

    def cross_rank(self) -> int:
        return 1

    def cross_size(self) -> int:
        return 2


def ranks(distributed: core.DistributedContext) -> tuple[Any, ...]:
    return (
        distributed.get_rank(),
        distributed.get_size(),
        distributed.get_local_rank(),
        distributed.get_local_size(),
        distributed.get_cross_rank(),
        distributed.get_cross_size(),
        distributed.get_num_agents(),
        distributed.chief_ip,
    )


def test_from_horovod(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.delenv("PEDL_CHIEF_IP", raising=False)
    monkeypatch.setenv("DET_CHIEF_IP", "10.0.0.7")
    assert ranks(core.DistributedContext.from_horovod(FakeHorovod())) == (
        *(3, 4, 1, 2, 1, 2, 2),
        "10.0.0.7",
    )
    made = core.DistributedContext.from_horovod(FakeHorovod(), chief_ip="10.0.0.9")
    assert made.chief_ip == "10.0.0.9"
    monkeypatch.delenv("DET_CHIEF_IP")
    with pytest.raises(ValueError, match="chief_ip is required"):
        core.DistributedContext.from_horovod(FakeHorovod())


def test_from_deepspeed(monkeypatch: pytest.MonkeyPatch) -> None:
    env = {"RANK": "2", "WORLD_SIZE": "4", "LOCAL_RANK": "0", "LOCAL_SIZE": "2"}
    for name, value in (env | {"CROSS_RANK": "1", "CROSS_SIZE": "2"}).items():
        monkeypatch.setenv(name, value)
    monkeypatch.setenv("PEDL_CHIEF_IP", "10.0.0.8")
    assert ranks(core.DistributedContext.from_deepspeed()) == (2, 4, 0, 2, 1, 2, 2, "10.0.0.8")
    monkeypatch.delenv("CROSS_SIZE")
    with pytest.raises(ValueError, match="CROSS_SIZE") as info:
        core.DistributedContext.from_deepspeed()
    (line,) = str(info.value).splitlines()  # one line, naming PEDL's alternative
    assert "DistributedContext.from_env()" in line


def test_ports_not_given_are_the_trials(monkeypatch: pytest.MonkeyPatch) -> None:
    """A script's own launcher builds its workers' contexts without ports (as Determined's
    tutorial does): inside a trial they are the ones PEDL chose for it."""
    for name in ("PEDL_PUB_PORT", "PEDL_PULL_PORT", "PEDL_PORT_OFFSET"):
        monkeypatch.delenv(name, raising=False)
    plain = core.DistributedContext(rank=1, size=2, local_rank=1, local_size=2)
    assert (plain.pub_port, plain.pull_port, plain.port_offset) == (12360, 12376, 0)
    monkeypatch.setenv("PEDL_PUB_PORT", "40001")
    monkeypatch.setenv("PEDL_PULL_PORT", "40002")
    monkeypatch.setenv("PEDL_PORT_OFFSET", "3")
    inside = core.DistributedContext(rank=1, size=2, local_rank=1, local_size=2)
    assert (inside.pub_port, inside.pull_port, inside.port_offset) == (40001, 40002, 3)
    given = core.DistributedContext(pub_port=5000, pull_port=5001, port_offset=0)
    assert (given.pub_port, given.pull_port, given.port_offset) == (5000, 5001, 0)


def test_from_torch_distributed(monkeypatch: pytest.MonkeyPatch) -> None:
    env = {"RANK": "5", "WORLD_SIZE": "6", "LOCAL_RANK": "2", "LOCAL_WORLD_SIZE": "3"}
    for name, value in (env | {"GROUP_RANK": "1", "GROUP_WORLD_SIZE": "2"}).items():
        monkeypatch.setenv(name, value)
    made = core.DistributedContext.from_torch_distributed(chief_ip="10.0.0.2")
    assert ranks(made) == (5, 6, 2, 3, 1, 2, 2, "10.0.0.2")
    monkeypatch.setenv("RANK", "five")
    with pytest.raises(ValueError, match="RANK='five' is not an integer"):
        core.DistributedContext.from_torch_distributed(chief_ip="10.0.0.2")
