"""A real master (PostgreSQL as its database) whose resource manager is a two-node Ray cluster of
this machine: a random search's trials run on both nodes and checkpoint to S3 (moto's server);
a node killed mid-trial ends that trial's attempt saying so, and the trial finishes on the
other node from its latest checkpoint, its restart counted."""

from __future__ import annotations

import json
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from tests.master.conftest import _create_pg_database, _drop_pg_database
from tests.master.e2e import (
    MasterProcess,
    create_experiment,
    logs,
    trials,
    wait_for,
)
from tests.ray.cluster import ray_cluster
from tests.s3_server import ACCESS_KEY, SECRET_KEY, S3Server
from tests.waits import scaled

pytest.importorskip("ray")
pytestmark = pytest.mark.slow

CONFIG = """
name: ray-random
hyperparameters: {{global_batch_size: 16, lr: {{type: double, minval: 0.001, maxval: 0.1}}}}
searcher: {{name: random, metric: val_accuracy, smaller_is_better: false, max_trials: 2,
  max_length: {{batches: 40}}}}
scheduling_unit: 10
min_validation_period: {{batches: 10}}
min_checkpoint_period: {{batches: 10}}
max_restarts: 2
reproducibility: {{experiment_seed: 5}}
environment:
  environment_variables: [PEDL_TEST_SLEEP=0.4]
checkpoint_storage:
  type: s3
  bucket: {bucket}
  prefix: pedl/ray
  access_key: {access_key}
  secret_key: {secret_key}
  endpoint_url: {endpoint_url}
"""


@pytest.fixture
def cluster(tmp_path: Path, s3_server: S3Server) -> Iterator[Any]:
    with ray_cluster(tmp_path / "cluster") as made:
        yield made


@pytest.fixture
def master(tmp_path: Path, cluster: Any) -> Iterator[MasterProcess]:
    name, url = _create_pg_database()
    rm = json.dumps({"type": "ray", "address": cluster.address})
    made = MasterProcess(tmp_path / "master", env={"PEDL_DB_URL": url, "PEDL_RESOURCE_MANAGER": rm})
    try:
        yield made.start()
    finally:
        made.stop()
        _drop_pg_database(name)


def node_of(text: str) -> list[str]:
    marker = "[master] the trial runs on the Ray node "
    return [line[len(marker) :].split()[0] for line in text.splitlines() if line.startswith(marker)]


def test_a_search_on_two_nodes_survives_a_lost_node(
    master: MasterProcess, cluster: Any, s3_server: S3Server
) -> None:
    http = master.http
    deadline = time.monotonic() + scaled(
        60
    )  # the master joins the cluster from a thread of its own
    while http.get("/cluster").json()["slots_total"] != 2:
        assert time.monotonic() < deadline, master.log()[-3000:]
        time.sleep(0.2)
    bucket = s3_server.new_bucket()
    config = CONFIG.format(
        bucket=bucket,
        access_key=ACCESS_KEY,
        secret_key=SECRET_KEY,
        endpoint_url=s3_server.endpoint_url,
    )
    experiment_id = create_experiment(http, config)
    # both trials run at once, one on each node; wait for the first checkpoint of one
    deadline = time.monotonic() + scaled(180)
    while True:
        found = trials(http, experiment_id)
        running = [t for t in found if t["state"] == "RUNNING" and t["latest_checkpoint_uuid"]]
        if len(found) == 2 and running:
            break
        assert time.monotonic() < deadline, (found, master.log()[-3000:])
        time.sleep(0.2)
    victim = running[0]
    (node_id,) = node_of(logs(http, victim["id"]))
    lost = next(node for node in cluster.pedl_nodes if node.node_id == node_id)
    cluster.remove_node(lost, allow_graceful=False)

    wait_for(http, experiment_id, {"COMPLETED"}, timeout=300, master=master)
    done = {t["id"]: t for t in trials(http, experiment_id)}
    assert all(t["state"] == "COMPLETED" for t in done.values()), done
    texts = {trial_id: logs(http, trial_id) for trial_id in done}
    nodes = {node for text in texts.values() for node in node_of(text)}
    assert nodes == {node.node_id for node in cluster.pedl_nodes}  # both nodes ran trials
    victim_log = texts[victim["id"]]
    assert f"the Ray node {node_id}" in victim_log and "was lost" in victim_log, victim_log
    assert f"the trial process exited (signal SIGKILL): its Ray node {node_id} (" in victim_log, (
        victim_log
    )
    assert done[victim["id"]]["restarts"] == 1
    assert "starting the trial process from the checkpoint at batch" in victim_log
    assert node_of(victim_log)[-1] != node_id  # it finished on the other node
    # its checkpoints are in S3
    assert any(key.startswith("pedl/ray/") for key in s3_server.keys(bucket))
