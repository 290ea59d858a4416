"""The master of a random search on a two-node Ray cluster is SIGKILLed mid-search: its Ray
actors, and so the trial processes, go with it (nothing left running, nothing doubled); the
master restarted on the same home and port runs the trials again from their checkpoints, and
the search ends with the same trials, final weights and metric rows as an undisturbed run (on
the local resource manager: where a trial runs changes none of its numbers)."""

from __future__ import annotations

import json
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import httpx
import pytest

from tests.master.e2e import MasterProcess, create_experiment, wait_for
from tests.master.test_orchestration import RANDOM, RANDOM_HP, _wait_rows, config, results
from tests.ray.cluster import ray_cluster
from tests.waits import scaled

pytest.importorskip("ray")
pytestmark = pytest.mark.slow


@pytest.fixture
def cluster(tmp_path: Path) -> Iterator[Any]:
    with ray_cluster(tmp_path / "cluster") as made:
        yield made


def _trial_processes(master_url: str) -> list[int]:
    """Processes whose environment says they are trials of the master at ``master_url``."""
    needle = f"PEDL_MASTER_URL={master_url}".encode()
    found = []
    for entry in Path("/proc").iterdir():
        if not entry.name.isdigit():
            continue
        try:
            environ = (entry / "environ").read_bytes()
        except OSError:
            continue
        if needle in environ.split(b"\0"):
            found.append(int(entry.name))
    return found


def test_a_sigkilled_master_of_a_ray_search_restarts_with_nothing_lost_or_doubled(
    cluster: Any, tmp_path: Path
) -> None:
    reference_master = MasterProcess(tmp_path / "reference").start()
    try:
        reference_id = create_experiment(
            reference_master.http, config("ref-random", RANDOM, RANDOM_HP)
        )
        wait_for(
            reference_master.http,
            reference_id,
            {"COMPLETED"},
            timeout=scaled(300),
            master=reference_master,
        )
        expected = results(reference_master, reference_id)
    finally:
        reference_master.stop()

    env = {"PEDL_RESOURCE_MANAGER": json.dumps({"type": "ray", "address": cluster.address})}
    home = tmp_path / "crashing"
    master = MasterProcess(home, env=env).start()
    experiment_id = create_experiment(
        master.http, config("ref-random", RANDOM, RANDOM_HP, env=["PEDL_TEST_SLEEP=0.1"])
    )
    try:
        _wait_rows(master, experiment_id, 5, "the first rows")
        assert _trial_processes(master.url), "no trial process runs"
        master.sigkill()
        master.http.close()
        deadline = time.monotonic() + scaled(60)
        while _trial_processes(master.url):
            assert time.monotonic() < deadline, "trial processes outlived their master's actors"
            time.sleep(0.5)
        again = MasterProcess(home, env=env)
        again.port, again.url = master.port, master.url  # same address, as after a restart
        again.http = httpx.Client(base_url=master.url + "/api/v1", timeout=scaled(30))
        master = again.start()
        wait_for(master.http, experiment_id, {"COMPLETED"}, timeout=300, master=master)
        got = results(master, experiment_id)
    finally:
        master.stop()
    assert [t.hparams for t in got] == [t.hparams for t in expected]
    for mine, theirs in zip(got, expected, strict=True):
        assert mine.weights == theirs.weights
        assert mine.rows == theirs.rows
