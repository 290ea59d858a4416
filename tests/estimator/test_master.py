"""EstimatorTrial on a master: the master runs here (TensorFlow 2.21), its trials with the
estimator environment's Python (``PEDL_TRIAL_PYTHON``). An experiment paused mid-training and
activated again resumes from its checkpoint: the global step goes on and every metric is the
uninterrupted experiment's."""

from __future__ import annotations

import base64
import json
import shutil
import textwrap
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from pedl import model_def
from tests.master.e2e import (
    MasterProcess,
    create_experiment,
    logs,
    metric_rows,
    trials,
    wait_for,
    wait_trial,
)
from tests.waits import scaled

from .conftest import EXAMPLE

pytestmark = pytest.mark.slow

CONFIG = """
name: {name}
hyperparameters: {{global_batch_size: 16, learning_rate: 0.05}}
searcher: {{name: single, metric: accuracy, smaller_is_better: false, max_length: {{batches: 20}}}}
scheduling_unit: 5
min_validation_period: {{batches: 10}}
min_checkpoint_period: {{batches: 10}}
reproducibility: {{experiment_seed: 4}}
environment:
  environment_variables: [PEDL_TRIAL_PYTHON={python}, PEDL_TEST_SLEEP={sleep}]
"""

SLEEPY = """
# The example's trial, slowed down by PEDL_TEST_SLEEP seconds per batch (not its numbers).
import os
import time

import tensorflow as tf

from . import model_def as _example


class _Sleep(tf.estimator.SessionRunHook):
    def after_run(self, run_context, run_values):
        time.sleep(float(os.environ.get("PEDL_TEST_SLEEP", "0")))


class SleepyIris(_example.IrisTrial):
    def build_train_spec(self):
        return tf.estimator.TrainSpec(super().build_train_spec().input_fn, hooks=[_Sleep()])
"""


@pytest.fixture(scope="module")
def master(tmp_path_factory: pytest.TempPathFactory) -> Iterator[MasterProcess]:
    process = MasterProcess(tmp_path_factory.mktemp("master")).start()
    try:
        yield process
    finally:
        process.stop()


def one_trial(master: MasterProcess, experiment_id: int) -> dict[str, Any]:
    deadline = time.monotonic() + scaled(60)
    while not (found := trials(master.http, experiment_id)):
        assert time.monotonic() < deadline, master.log()[-3000:]
        time.sleep(0.2)
    (trial,) = found
    return trial


def checkpoint_metadata(
    master: MasterProcess, trial: dict[str, Any]
) -> tuple[Path, dict[str, Any]]:
    path = master.home / "pedl" / "checkpoints" / trial["latest_checkpoint_uuid"]
    return path, json.loads((path / "metadata.json").read_text())


def test_estimator_experiment_on_the_master_pauses_and_resumes_from_its_checkpoint(
    master: MasterProcess, estimator_python: Path, tmp_path: Path
) -> None:
    model = tmp_path / "model"
    shutil.copytree(EXAMPLE, model, ignore=shutil.ignore_patterns("*.yaml", "__pycache__"))
    (model / "__init__.py").write_text(textwrap.dedent(SLEEPY))
    http = master.http
    reference = create_experiment(
        http, CONFIG.format(name="reference", python=estimator_python, sleep=0), model
    )
    paused = create_experiment(
        http, CONFIG.format(name="paused", python=estimator_python, sleep=0.25), model
    )
    trial = one_trial(master, paused)
    wait_trial(
        http,
        trial["id"],
        lambda t: t["total_batches"] >= 5 and t["state"] == "RUNNING",
        timeout=180,
    )
    assert http.post(f"/experiments/{paused}/pause").status_code == 200
    wait_for(http, paused, {"PAUSED"}, master=master)
    stopped = wait_trial(http, trial["id"], lambda t: t["state"] == "PAUSED")
    assert 5 <= stopped["total_batches"] < 20 and stopped["latest_checkpoint_uuid"]
    _, at_pause = checkpoint_metadata(master, stopped)
    assert at_pause["global_step"] == stopped["total_batches"]
    assert http.post(f"/experiments/{paused}/activate").status_code == 200
    wait_for(http, paused, {"COMPLETED"}, timeout=240, master=master)
    wait_for(http, reference, {"COMPLETED"}, timeout=240, master=master)

    resumed, undisturbed = one_trial(master, paused), one_trial(master, reference)
    path, metadata = checkpoint_metadata(master, resumed)
    assert metadata["global_step"] == metadata["steps_completed"] == 20
    assert metadata["tensorflow_version"] == "2.15.1"
    for key in ("raw", "parsing"):
        assert (path / metadata["saved_models"][key] / "saved_model.pb").is_file()
    got, want = metric_rows(http, resumed["id"]), metric_rows(http, undisturbed["id"])
    assert [(kind, batches) for kind, batches, _ in got] == [(k, b) for k, b, _ in want]
    for (_, _, g), (_, _, w) in zip(got, want, strict=True):
        assert g == pytest.approx(w, rel=1e-6, abs=1e-7)
    text = logs(http, resumed["id"])
    assert "EstimatorTrial on TensorFlow 2.15.1" in text
    assert f"resumed from checkpoint {stopped['latest_checkpoint_uuid']}" in text


def test_a_trial_python_that_does_not_exist_is_refused_saying_so(
    master: MasterProcess, tmp_path: Path
) -> None:
    """A master never accepts an experiment it cannot start: PEDL_TRIAL_PYTHON naming no
    Python is a 422 naming the field and the path (it used to be accepted, its trial then
    ending ERROR)."""
    missing = tmp_path / "no-such-venv" / "bin" / "python"
    archive = base64.b64encode(model_def.package(EXAMPLE)).decode()
    config = CONFIG.format(name="missing", python=missing, sleep=0)
    response = master.http.post(
        "/experiments", json={"config": config, "model_definition": archive}
    )
    assert response.status_code == 422, response.text
    error = response.json()["error"]
    assert error["field"] == "config.environment.environment_variables"
    assert f"PEDL_TRIAL_PYTHON={missing}" in error["message"]
