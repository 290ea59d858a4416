"""The shared-memory average of the workers of one machine (pedl.keras._host_allreduce),
between real worker processes that meet through a real DistributedContext."""

from __future__ import annotations

import multiprocessing
import os
import time
from pathlib import Path
from typing import Any

import numpy as np
import pytest

from pedl import core
from pedl.exec import free_ports
from pedl.keras._host_allreduce import HostAllReduce, HostAllReduceError, _make_file, usable
from tests.waits import scaled

pytestmark = pytest.mark.skipif(not os.path.isdir("/proc"), reason="Linux only")


def _vector(step: int, rank: int, capacity: int) -> np.ndarray:
    """Step ``step``'s vector of worker ``rank``: its length and values drawn from both."""
    length = int(np.random.default_rng(step).integers(1, capacity + 1))
    rng = np.random.default_rng([step, rank])
    return (rng.standard_normal(length) * 10.0 ** rng.integers(-3, 4)).astype(np.float32)


def _worker(job: dict[str, Any], rank: int, results: Any) -> None:
    context = core.DistributedContext(
        rank=rank,
        size=job["size"],
        local_rank=rank,
        local_size=job["size"],
        pub_port=job["ports"][0],
        pull_port=job["ports"][1],
        timeout=job["timeout"],
    )
    try:
        allreduce = HostAllReduce(context, job["capacity"])
        if "allreduce_timeout" in job:  # the context's own, for its connecting, stays long
            allreduce._timeout = job["allreduce_timeout"]
        outcome: Any = None
        if job["kind"] == "means":
            outcome = [
                allreduce.mean(_vector(step, rank, job["capacity"])).tobytes()
                for step in range(job["steps"])
            ]
        elif job["kind"] == "too_long":
            try:
                allreduce.mean(np.zeros(job["capacity"] + 1, np.float32))
            except ValueError as e:
                outcome = str(e)
        elif rank == 1:  # "exit" or "silent": worker 1 takes part in one step only
            allreduce.mean(np.ones(4, np.float32))
            if job["kind"] == "exit":
                os._exit(0)
            time.sleep(scaled(60))
        else:
            allreduce.mean(np.ones(4, np.float32))
            started = time.monotonic()
            try:
                allreduce.mean(np.ones(4, np.float32))
            except HostAllReduceError as e:
                outcome = (type(e).__name__, str(e), time.monotonic() - started)
        results.put((rank, outcome))
    finally:
        context.close()


def _run(job: dict[str, Any], *, wait_for: int | None = None) -> dict[int, Any]:
    """Run ``job`` on ``job["size"]`` worker processes; the results of the first
    ``wait_for`` of them to answer (all by default), by rank."""
    spawn = multiprocessing.get_context("spawn")
    results = spawn.Queue()
    job = {"timeout": scaled(60), **job, "ports": free_ports(2)}
    procs = [spawn.Process(target=_worker, args=(job, r, results)) for r in range(job["size"])]
    for p in procs:
        p.start()
    try:
        answers = dict(results.get(timeout=scaled(120)) for _ in range(wait_for or len(procs)))
    finally:
        for p in procs:
            p.join(timeout=scaled(30) if wait_for is None else 0)
            if p.is_alive():
                p.kill()
                p.join()
    return answers


def test_every_worker_gets_the_rank_order_mean_bit_for_bit() -> None:
    capacity, steps, size = 3000, 60, 3
    answers = _run({"kind": "means", "size": size, "capacity": capacity, "steps": steps})
    assert sorted(answers) == list(range(size))
    for step in range(steps):
        vectors = [_vector(step, rank, capacity) for rank in range(size)]
        expected = ((vectors[0] + vectors[1]) + vectors[2]) / np.float32(size)
        for rank in range(size):
            got = np.frombuffer(answers[rank][step], dtype=np.float32)
            np.testing.assert_array_equal(got, expected, err_msg=f"step {step} rank {rank}")
        # and it is the mean, up to float32 rounding
        np.testing.assert_allclose(expected, np.mean(vectors, axis=0), rtol=1e-5, atol=1e-6)


def test_a_vector_over_capacity_is_refused_before_any_worker_waits() -> None:
    answers = _run({"kind": "too_long", "size": 2, "capacity": 10})
    assert answers == {r: "11 values for an all-reduce of capacity 10" for r in range(2)}


def test_a_worker_whose_peer_exited_says_so_instead_of_waiting() -> None:
    answers = _run({"kind": "exit", "size": 2, "capacity": 8}, wait_for=1)
    name, message, waited = answers[0]
    assert name == "HostAllReduceError"
    assert "worker 1 (process" in message and "exited" in message and "step 2" in message
    assert waited < scaled(30)  # found by the liveness check, not the 60 s timeout


def test_a_worker_gives_up_after_the_distributed_timeout() -> None:
    job = {"kind": "silent", "size": 2, "capacity": 8, "allreduce_timeout": 1.0}
    answers = _run(job, wait_for=1)
    name, message, waited = answers[0]
    assert name == "HostAllReduceError"
    assert "waited 1 s" in message and "PEDL_DIST_TIMEOUT" in message
    assert waited >= 1.0


@pytest.mark.parametrize(
    ("local_size", "setting", "expected"),
    [(2, None, True), (2, "1", True), (2, "0", False), (1, None, False)],
)
def test_usable_only_where_every_worker_is_on_this_machine_and_not_turned_off(
    monkeypatch: pytest.MonkeyPatch, local_size: int, setting: str | None, expected: bool
) -> None:
    if setting is None:
        monkeypatch.delenv("PEDL_HOST_ALLREDUCE", raising=False)
    else:
        monkeypatch.setenv("PEDL_HOST_ALLREDUCE", setting)
    context = core.DistributedContext(
        rank=0,
        size=2,
        local_rank=0,
        local_size=local_size,
        cross_size=2 if local_size == 1 else 1,
        chief_ip="127.0.0.1",
    )
    assert usable(context) is expected
    assert usable(core.DistributedContext.single()) is False


def test_without_room_for_the_slots_the_reason_names_the_way_out(tmp_path: Path) -> None:
    # More than a file system can reserve: refused up front, nothing left behind (a mapping
    # whose file could not grow would end the worker with SIGBUS in the middle of a step).
    why = _make_file(2**60, [str(tmp_path)])
    assert isinstance(why, str)
    assert why.startswith("no room for the workers' gradient all-reduce (1099511627776.0 MiB)")
    assert str(tmp_path) in why and "PEDL_HOST_ALLREDUCE=0" in why
    assert list(tmp_path.iterdir()) == []
    made = _make_file(64, [str(tmp_path)])
    assert not isinstance(made, str)
    name, token = made
    assert Path(name).parent == tmp_path and Path(name).stat().st_size == 64 and token
