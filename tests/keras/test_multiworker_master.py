"""A 2-worker TFKerasTrial on a real master with two CPU slots (issue 20): the launcher
starts two trial processes, each builds its DistributedContext from the environment and
trains under MultiWorkerMirroredStrategy. Paused and activated, then its non-chief and its
chief SIGKILLed at seeded random batches, the trial restarts from its checkpoint and ends
with final weights bitwise equal to an uninterrupted 2-worker run's, no metric row lost or
doubled; on Keras 3 and in Keras 2 mode (``TF_USE_LEGACY_KERAS=1`` in the experiment's
environment)."""

from __future__ import annotations

import json
import os
import random
import signal
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from tests.master.e2e import (
    MasterProcess,
    create_experiment,
    final_weights,
    logs,
    metric_rows,
    trials,
    wait_for,
)
from tests.waits import scaled

pytestmark = pytest.mark.slow

MODEL_DIR = Path(__file__).parent / "multiworker_model"
CONFIG = """
name: keras-2-workers
entrypoint: model_def:BlobsTrial
hyperparameters: {{global_batch_size: 16, step_seconds: {step}}}
searcher: {{name: single, metric: val_accuracy, smaller_is_better: false,
           max_length: {{batches: 40}}}}
scheduling_unit: 4
min_validation_period: {{batches: 8}}
min_checkpoint_period: {{batches: 4}}
checkpoint_policy: none
checkpoint_storage: {{type: shared_fs, host_path: {storage}}}
resources: {{slots_per_trial: 2}}
max_restarts: 2
reproducibility: {{experiment_seed: 3}}
environment: {{environment_variables: [TF_USE_LEGACY_KERAS={legacy}]}}
"""


@pytest.fixture
def master(tmp_path: Path) -> Iterator[MasterProcess]:
    process = MasterProcess(tmp_path / "master", cpu_slots=2).start()
    try:
        yield process
    finally:
        process.stop()


def _trial(master: MasterProcess, experiment_id: int) -> dict[str, Any]:
    deadline = time.monotonic() + scaled(120)
    while not (found := trials(master.http, experiment_id)):
        assert time.monotonic() < deadline, master.log()[-3000:]
        time.sleep(0.1)
    return found[0]


def _at_batch(master: MasterProcess, trial_id: int, batches: int) -> dict[str, Any]:
    """The trial once it reported ``batches`` or more (its workers running)."""
    deadline = time.monotonic() + scaled(180)
    while True:
        body: dict[str, Any] = master.http.get(f"/trials/{trial_id}").json()
        workers = master.http.get(f"/trials/{trial_id}/workers").json()
        running = [w for w in workers if w["state"] == "running"]
        if body["total_batches"] >= batches and len(running) == 2:
            return {"trial": body, "workers": running}
        assert body["state"] not in ("COMPLETED", "ERRORED"), logs(master.http, trial_id)
        assert time.monotonic() < deadline, (body, logs(master.http, trial_id)[-4000:])
        time.sleep(0.05)


@pytest.mark.parametrize("legacy", [0, 1], ids=["keras3", "keras2"])
def test_a_two_worker_keras_trial_survives_pause_and_killed_workers_bitwise(
    master: MasterProcess, tmp_path: Path, legacy: int
) -> None:
    storage = tmp_path / "checkpoints"
    config = CONFIG.format(step=0.1, storage=storage, legacy=legacy)
    baseline_id = create_experiment(master.http, config, MODEL_DIR)
    wait_for(master.http, baseline_id, {"COMPLETED"}, timeout=240, master=master)
    baseline = _trial(master, baseline_id)
    text = logs(master.http, baseline["id"])
    assert "resumed" not in text

    rng = random.Random(20)
    pause_at, kill_other_at, kill_chief_at = sorted(rng.sample(range(4, 36), 3))
    experiment_id = create_experiment(master.http, config, MODEL_DIR)
    trial_id = _trial(master, experiment_id)["id"]
    _at_batch(master, trial_id, pause_at)
    assert master.http.post(f"/experiments/{experiment_id}/pause").status_code == 200
    wait_for(master.http, experiment_id, {"PAUSED"}, master=master)
    deadline = time.monotonic() + scaled(60)
    while master.http.get(f"/trials/{trial_id}/workers").json() and any(
        w["state"] == "running" for w in master.http.get(f"/trials/{trial_id}/workers").json()
    ):
        assert time.monotonic() < deadline
        time.sleep(0.1)
    assert master.http.post(f"/experiments/{experiment_id}/activate").status_code == 200
    for at, rank in ((kill_other_at, 1), (kill_chief_at, 0)):
        seen = _at_batch(master, trial_id, at)
        (victim,) = [w for w in seen["workers"] if w["rank"] == rank]
        os.kill(int(victim["pid"]), signal.SIGKILL)
    wait_for(master.http, experiment_id, {"COMPLETED"}, timeout=300, master=master)
    trial = _trial(master, experiment_id)
    assert trial["restarts"] == 2, trial

    assert final_weights(storage, trial) == final_weights(storage, baseline)
    metadata = json.loads((storage / trial["latest_checkpoint_uuid"] / "metadata.json").read_text())
    assert ("Keras 2" in metadata["keras_version"]) == bool(legacy), metadata["keras_version"]
    assert metric_rows(master.http, trial_id) == metric_rows(master.http, baseline["id"])
    text = logs(master.http, trial_id)
    assert "resumed from checkpoint" in text
