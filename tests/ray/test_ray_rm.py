"""The ray resource manager on a two-node Ray cluster of this machine: trials run on both nodes,
``resources.resource_pool`` pins a trial to the nodes with that custom resource, a 2-worker
trial is placed on both nodes, a node lost
mid-trial ends the attempt with a line saying so, and a cluster that cannot be reached leaves
trials queued with that reason."""

from __future__ import annotations

import base64
import contextlib
import dataclasses
import json
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import httpx
import numpy as np
import pytest

from tests.master.test_rm_contract import FAKE_TRIAL, Recorder
from tests.ray.cluster import ray_cluster

pytest.importorskip("ray")

from pedl import model_def
from pedl.master import MasterSettings, create_app
from pedl.master.api._app import make_database
from pedl.master.orchestrator import Orchestrator
from pedl.master.rm import RayResourceManager, TrialLaunch
from tests.master.e2e import free_port
from tests.master.helpers import LiveServer, sign_in
from tests.master.test_multi_worker import (
    _completed,
    _create,
    _logs,
    _running_workers,
    _trial_id,
)
from tests.waits import scaled, until

KERAS_MODEL = Path(__file__).parents[1] / "local" / "keras_workers_model"
KERAS_CONFIG = """
name: ray-keras-2-workers
entrypoint: model_def:BlobsTrial
hyperparameters: {{global_batch_size: 16, step_seconds: 0, out: {out}, learning_rate: 0.02}}
searcher: {{name: single, metric: val_accuracy, smaller_is_better: false,
           max_length: {{batches: 8}}}}
scheduling_unit: 4
min_checkpoint_period: {{batches: 4}}
checkpoint_storage: {{type: shared_fs, host_path: {storage}}}
resources: {{slots_per_trial: 2}}
max_restarts: 0
reproducibility: {{experiment_seed: 3}}
"""


@contextlib.contextmanager
def _ray_master(cluster: Any, tmp_path: Path) -> Iterator[httpx.Client]:
    """A master over HTTP whose resource manager is the cluster, once it sees both slots."""
    port = free_port()
    settings = MasterSettings(
        home=tmp_path / "home",
        db_url=f"sqlite:///{tmp_path / 'pedl.db'}",
        resource_manager={"type": "ray", "address": cluster.address},
    )
    database = make_database(settings)
    orchestrator = Orchestrator(database, settings, master_url=f"http://127.0.0.1:{port}")
    app = create_app(settings, database=database, orchestrator=orchestrator)
    try:
        with (
            LiveServer(app, port=port) as server,
            httpx.Client(
                base_url=server.url + "/api/v1", timeout=scaled(30), headers=sign_in(database)
            ) as http,
        ):
            deadline = time.monotonic() + scaled(60)
            while http.get("/cluster").json()["slots_total"] != 2:
                assert time.monotonic() < deadline
                time.sleep(0.2)
            yield http
    finally:
        database.dispose()


def _heartbeat_ages(http: httpx.Client, trial_id: int) -> list[float] | None:
    """The heartbeat ages of the trial's two running workers, once both have one."""
    workers = _running_workers(http, trial_id) or []
    ages = [w["heartbeat_age"] for w in workers]
    return ages if ages and None not in ages else None


@pytest.fixture(scope="module")
def cluster(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Any]:
    with ray_cluster(tmp_path_factory.mktemp("raycluster")) as made:
        yield made


@pytest.fixture(scope="module")
def fake_python(tmp_path_factory: pytest.TempPathFactory) -> str:
    path = tmp_path_factory.mktemp("fake") / "fake-python"
    path.write_text(FAKE_TRIAL)
    path.chmod(0o755)
    return str(path)


def launch(trial_id: int, fake_python: str, pool: str | None = None, **env: str) -> TrialLaunch:
    return TrialLaunch(
        trial_id,
        "http://127.0.0.1:1",
        f"token-{trial_id}",
        1,
        {"PEDL_TRIAL_PYTHON": fake_python, **env},
        resource_pool=pool,
    )


def node_of(rec: Recorder, trial_id: int) -> str:
    (line,) = [text for stream, text, *_ in rec.lines[trial_id] if stream == "master"][:1]
    assert line.startswith("[master] the trial runs on the Ray node "), line
    return line.split()[8]


def test_trials_run_on_both_nodes_and_pools_pin_them(cluster: Any, fake_python: str) -> None:
    rec = Recorder()
    rm = RayResourceManager(address=cluster.address, on_exit=rec.on_exit, log_sink=rec.sink)
    try:
        assert rm.wait_connected(scaled(60))
        rm.start(launch(1, fake_python, FAKE_MODE="sleep"))
        rm.start(launch(2, fake_python, FAKE_MODE="sleep"))
        rec.wait_for(1, "started")
        rec.wait_for(2, "started")
        nodes = {node.node_id for node in cluster.worker_nodes}
        assert {node_of(rec, 1), node_of(rec, 2)} == nodes
        (running,) = rm.workers(1)
        assert (running.rank, running.state, running.exit_code) == (0, "running", None)
        rm.kill(1)
        rm.kill(2)
        assert {rec.exits.get(timeout=scaled(30)), rec.exits.get(timeout=scaled(30))} == {
            (1, -9),
            (2, -9),
        }
        # resources.resource_pool "node1": only the second node has that resource
        node1 = cluster.pedl_nodes[1].node_id
        for trial_id in (3, 4):
            rm.start(launch(trial_id, fake_python, pool="node1"))
            assert rec.exits.get(timeout=scaled(60)) == (trial_id, 0)
            assert node_of(rec, trial_id) == node1
        # a 2-worker trial: a placement group over both nodes (each has 1 CPU)
        rm.start(TrialLaunch(9, "http://127.0.0.1:1", "t", 2, {"PEDL_TRIAL_PYTHON": fake_python}))
        assert rec.exits.get(timeout=scaled(90)) == (9, 0)
        (placed,) = [text for stream, text, *_ in rec.lines[9] if "workers on the Ray" in text]
        assert all(node.node_id in placed for node in cluster.pedl_nodes), placed
        ended = rm.workers(9)
        assert [(w.rank, w.state, w.exit_code) for w in ended] == [
            (0, "exited", 0),
            (1, "exited", 0),
        ]
        assert [w.state for w in rm.workers(1)] == ["killed"]
    finally:
        rm.shutdown()


def test_a_two_worker_trial_on_two_nodes_completes_on_a_real_master(
    cluster: Any, tmp_path: Path
) -> None:
    """The framework-free ``gang_model`` (core-API collectives every batch) with
    ``slots_per_trial: 2`` on a master whose resource manager is the cluster: one worker on
    each node, both at the same batch to the end, logs tagged by rank; while they run, GET
    /trials/{id}/workers shows each one's heartbeat age, as the local resource manager does."""
    with _ray_master(cluster, tmp_path) as http:
        experiment_id = _create(http, step=0.2)
        trial_id = until(lambda: _trial_id(http, experiment_id), "the trial", timeout=90)
        workers = until(lambda: _running_workers(http, trial_id), "two running workers", timeout=90)
        ages = until(lambda: _heartbeat_ages(http, trial_id), "heartbeat ages", timeout=90)
        assert [w["rank"] for w in workers] == [0, 1]
        assert len(ages) == 2 and all(0 <= age < 30 for age in ages), ages
        trial = _completed(http, experiment_id, timeout=180)
        assert trial["restarts"] == 0 and trial["total_batches"] == 20
        every = _logs(http, trial["id"])
        ended = http.get(f"/trials/{trial['id']}/workers").json()
        assert [w["heartbeat_age"] for w in ended] == [None, None], ended
    (placed,) = [line["message"] for line in every if "workers on the Ray" in line["message"]]
    assert all(node.node_id in placed for node in cluster.pedl_nodes), placed
    seen = {}
    for line in every:
        if line["message"].startswith("gang-worker "):
            seen[line["rank"]] = json.loads(line["message"][len("gang-worker ") :])
    assert sorted(seen) == [0, 1]
    for rank, info in seen.items():
        assert info["size"] == 2 and info["ranks"] == [0, 1]
        assert info["tf_config"]["task"] == {"type": "worker", "index": rank}
        assert info["cuda"] == ""
    assert seen[0]["tf_config"]["cluster"] == seen[1]["tf_config"]["cluster"]
    for rank in (0, 1):
        assert any(
            line["rank"] == rank and f"rank {rank} done at batch 20" in line["message"]
            for line in every
        )


def test_a_shared_fs_directory_must_be_the_masters_on_the_node(
    cluster: Any, fake_python: str, tmp_path: Path
) -> None:
    rec = Recorder()
    rm = RayResourceManager(address=cluster.address, on_exit=rec.on_exit, log_sink=rec.sink)
    storage = tmp_path / "checkpoints"
    try:
        assert rm.wait_connected(scaled(60))
        start = launch(21, fake_python)
        rm.start(dataclasses.replace(start, checkpoint_dir=str(storage)))
        assert rec.exits.get(timeout=scaled(60)) == (21, 0)
        # another file system at that path on the node: its mark differs
        (storage / ".pedl-mount-check").write_text("another file system")
        rm.start(dataclasses.replace(launch(22, fake_python), checkpoint_dir=str(storage)))
        assert rec.exits.get(timeout=scaled(60)) == (22, -9)
        said = " ".join(text for stream, text, *_ in rec.lines[22] if stream == "master")
        assert f"the checkpoint storage directory {storage} (shared_fs)" in said, said
        assert "mount the same shared file system at that path on every node" in said
        assert not rec.texts(22, "stdout")  # it never started
    finally:
        rm.shutdown()


def test_a_node_lost_mid_trial_ends_the_attempt_saying_so(cluster: Any, fake_python: str) -> None:
    rec = Recorder()
    rm = RayResourceManager(address=cluster.address, on_exit=rec.on_exit, log_sink=rec.sink)
    try:
        assert rm.wait_connected(scaled(60))
        deadline = time.monotonic() + scaled(30)
        while rm.total_slots < 2 and time.monotonic() < deadline:
            time.sleep(0.2)
        assert rm.total_slots == 2
        rm.start(launch(5, fake_python, pool="node0", FAKE_MODE="sleep"))
        rec.wait_for(5, "started")
        lost = cluster.pedl_nodes[0]
        assert node_of(rec, 5) == lost.node_id
        cluster.remove_node(lost, allow_graceful=False)
        assert rec.exits.get(timeout=scaled(60)) == (5, -9)
        said = [text for stream, text, *_ in rec.lines[5] if stream == "master"]
        assert any(f"the Ray node {lost.node_id}" in s and "was lost" in s for s in said), said
        assert rm.running() == set()
        # the cluster shrank: one slot left
        deadline = time.monotonic() + scaled(30)
        while rm.total_slots != 1 and time.monotonic() < deadline:
            time.sleep(0.2)
        assert rm.total_slots == 1
    finally:
        rm.shutdown()
        # The module's other tests need both nodes: a fresh one takes the lost one's place.
        if cluster.pedl_nodes[0] not in cluster.list_all_nodes():
            cluster.pedl_nodes[0] = cluster.add_node(num_cpus=1, resources={"node0": 1})
            cluster.wait_for_nodes()


def test_an_unreachable_cluster_is_a_reason_to_wait(tmp_path: Any) -> None:
    rec = Recorder()
    with pytest.MonkeyPatch.context() as patch:
        patch.setenv("HOME", str(tmp_path))
        rm = RayResourceManager(address="127.0.0.1:1", on_exit=rec.on_exit, log_sink=rec.sink)
        try:
            deadline = time.monotonic() + scaled(90)
            while "cannot be reached" not in (rm.unavailable() or ""):
                assert time.monotonic() < deadline, rm.unavailable()
                time.sleep(0.2)
            assert "127.0.0.1:1" in (rm.unavailable() or "")
            assert rm.total_slots == 0
            with pytest.raises(RuntimeError, match="cannot be reached"):
                rm.start(TrialLaunch(1, "http://127.0.0.1:1", "t", 1, {}))
        finally:
            rm.shutdown()


def test_a_master_whose_cluster_cannot_be_reached_serves_and_queues_trials(
    tmp_path: Path,
) -> None:
    """Nothing listens at the address: the master serves, its trial waits QUEUED with the
    reason (the trial's log and GET /cluster), and is not failed as never fitting."""
    port = free_port()
    nowhere = f"127.0.0.1:{free_port()}"
    settings = MasterSettings(
        home=tmp_path / "home",
        db_url=f"sqlite:///{tmp_path / 'pedl.db'}",
        resource_manager={"type": "ray", "address": nowhere},
    )
    database = make_database(settings)
    orchestrator = Orchestrator(database, settings, master_url=f"http://127.0.0.1:{port}")
    app = create_app(settings, database=database, orchestrator=orchestrator)
    try:
        with (
            LiveServer(app, port=port) as server,
            httpx.Client(
                base_url=server.url + "/api/v1", timeout=scaled(30), headers=sign_in(database)
            ) as http,
        ):
            experiment_id = _create(http)
            deadline = time.monotonic() + scaled(60)
            while True:
                items = http.get(f"/experiments/{experiment_id}/trials").json()["items"]
                said = " ".join(m["message"] for m in _logs(http, items[0]["id"])) if items else ""
                if "cannot be reached" in said:
                    break
                assert time.monotonic() < deadline, (items, said)
                time.sleep(0.2)
            assert f"queued: the Ray cluster at {nowhere} cannot be reached" in said
            # Read again: the master records QUEUED before it logs why, and the tick may have
            # done both between the two reads above.
            items = http.get(f"/experiments/{experiment_id}/trials").json()["items"]
            assert items[0]["state"] == "QUEUED", items
            assert http.get(f"/experiments/{experiment_id}").json()["state"] == "ACTIVE"
            assert "cannot be reached" in (http.get("/cluster").json()["halted"] or "")
            assert http.get("/health").status_code == 200
    finally:
        database.dispose()


def test_a_two_worker_keras_trial_across_two_nodes_ends_with_identical_weights(
    cluster: Any, tmp_path: Path
) -> None:
    """A TFKerasTrial under MultiWorkerMirroredStrategy (``tests/local/keras_workers_model``)
    with ``slots_per_trial: 2``, one worker on each Ray node: it completes, its checkpoints
    through shared_fs, and both workers end with the same weights, bit for bit."""
    out = tmp_path / "weights"
    config = KERAS_CONFIG.format(out=out, storage=tmp_path / "checkpoints")
    archive = base64.b64encode(model_def.package(KERAS_MODEL)).decode()
    with _ray_master(cluster, tmp_path) as http:
        response = http.post("/experiments", json={"config": config, "model_definition": archive})
        assert response.status_code == 201, response.text
        trial = _completed(http, int(response.json()["id"]), timeout=300)
        assert trial["restarts"] == 0 and trial["total_batches"] == 8, trial
        assert trial["latest_checkpoint_uuid"], trial
        every = _logs(http, trial["id"])
    (placed,) = [line["message"] for line in every if "workers on the Ray" in line["message"]]
    assert all(node.node_id in placed for node in cluster.pedl_nodes), placed
    saved = []
    for rank in (0, 1):
        path = out / f"trial-{trial['id']}-rank-{rank}.npz"
        assert path.is_file(), [line["message"] for line in every][-40:]
        with np.load(path) as weights:
            count = sum(name.startswith("w") for name in weights.files)
            saved.append(
                (
                    int(weights["pid"]),
                    str(weights["strategy"]),
                    [weights[f"w{i}"] for i in range(count)],
                )
            )
    (chief_pid, chief_strategy, chief), (other_pid, other_strategy, other) = saved
    assert chief_pid != other_pid and chief
    # One worker on each node (local_size 1): MultiWorkerMirroredStrategy, not the host path.
    assert chief_strategy == other_strategy == "CollectiveAllReduceStrategy"
    for a, b in zip(chief, other, strict=True):
        np.testing.assert_array_equal(a, b)
