"""Keras 2 mode: Determined 0.38's TF-Keras script written for Keras 2
(``models/det038_keras2``: ``tensorflow.keras.optimizers.legacy.RMSprop(lr=, decay=)``,
positional ``compile`` metrics, ``from_tf_config()``, ``DeterminedCallback``) runs unchanged
with ``TF_USE_LEGACY_KERAS=1``, which a config naming one of Determined's TensorFlow images
gets without being told: const and adaptive searches, paused and activated mid-run, and 0.38's
``distributed.yaml`` form on 2 slots (Keras 2's own ``fit`` under the script's
``MultiWorkerMirroredStrategy``)."""

from __future__ import annotations

import json
import os
import subprocess
import sys
import time
from collections.abc import Iterator
from pathlib import Path

import pytest

from pedl.config import parse_config
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

MODEL = Path(__file__).parent / "models" / "det038_keras2"
IMAGE = "determinedai/tensorflow-ngc-dev:0736b6d"
ROOT = Path(__file__).parents[2]


def test_a_determined_tensorflow_image_puts_a_script_or_trial_class_in_keras2_mode() -> None:
    script = parse_config((MODEL / "const.yaml").read_text())
    env = script.environment.env_dict(gpu=False)
    assert env == {"TF_USE_LEGACY_KERAS": "1", "PEDL_KERAS2_IMAGE": IMAGE}
    keras3 = parse_config(
        (MODEL / "const.yaml")
        .read_text()
        .replace(
            "hyperparameters:", "  environment_variables: [TF_USE_LEGACY_KERAS=0]\nhyperparameters:"
        )
    )
    assert keras3.environment.env_dict(gpu=False) == {"TF_USE_LEGACY_KERAS": "0"}
    # A Trial class too (tests/keras/test_keras2.py trains one in Keras 2 mode).
    trial_class = parse_config(
        "entrypoint: model_def:Trial\nsearcher: {name: single, metric: x, max_length: 2}\n"
        f"environment: {{image: {IMAGE}}}\n"
    )
    assert trial_class.environment.env_dict(gpu=False) == env


LOCAL_RUN = """
import json, sys, tempfile
from pathlib import Path
from pedl.vocabulary import MetricKind
from pedl.local import LocalExperiment
from tests import local_record as record
model = Path(sys.argv[1])
with tempfile.TemporaryDirectory() as tmp:
    e = LocalExperiment.create(model / sys.argv[2], model, Path(tmp))
    summary = e.run()
    e.close()
    kind = MetricKind.VALIDATION
    rows = {t.id: [(b, m) for _, b, m in record.metric_rows(e.directory, t.id, kind)]
            for t in record.trials(e.directory)}
print("RESULT " + json.dumps({"state": summary.state, "rows": rows}))
"""


def run_local(config: str) -> dict[str, object]:
    """A local run in a fresh process with TF_USE_LEGACY_KERAS=1 (it must be set before
    TensorFlow is imported)."""
    path = os.pathsep.join([str(ROOT / "compat" / "determined"), str(ROOT)])
    env = {**os.environ, "TF_USE_LEGACY_KERAS": "1", "PYTHONPATH": path}
    done = subprocess.run(
        [sys.executable, "-c", LOCAL_RUN, str(MODEL), config],
        capture_output=True,
        text=True,
        env=env,
        timeout=scaled(300),
        cwd=ROOT,
    )
    lines = [line for line in done.stdout.splitlines() if line.startswith("RESULT ")]
    assert done.returncode == 0 and lines, done.stderr[-3000:]
    result: dict[str, object] = json.loads(lines[-1][len("RESULT ") :])
    return result


@pytest.mark.slow
def test_const_and_adaptive_run_locally_on_keras2() -> None:
    const = run_local("const.yaml")
    assert const["state"] == "COMPLETED"
    (rows,) = const["rows"].values()  # type: ignore[attr-defined]
    # Keras 2's own metric names; 3 epochs of 4 batches, as fit(epochs=3) decides.
    assert [(b, m["batches"], m["epochs"]) for b, m in rows] == [(4, 4, 1), (8, 8, 2), (12, 12, 3)]
    assert all("categorical_accuracy" in m and "loss" in m for _, m in rows)
    adaptive = run_local("adaptive.yaml")
    assert adaptive["state"] == "COMPLETED"
    last = [max(b for b, _ in rows) for rows in adaptive["rows"].values()]  # type: ignore[attr-defined]
    assert len(last) == 4 and 16 in last, last


KERAS3_SCRIPT = """
import keras
import numpy as np

x = np.zeros((16, 3), dtype="float32")
model = keras.Sequential([keras.Input((3,)), keras.layers.Dense(1)])
model.compile("sgd", "mse")
model.fit(x, x[:, :1], batch_size=8)
"""

ATTEMPT = """
import json, sys
from pathlib import Path
from pedl import core
from pedl.config import load_config
from pedl.exec import run_attempt
code = Path(sys.argv[1])
config = load_config(code / "const.yaml")
context = lambda: core.detached_context(config, hparams={}, code_dir=code)
result = run_attempt(code, "train.py", context)
error = result.error
print("RESULT " + json.dumps([result.outcome.value, error.type, error.message, error.location]))
"""


@pytest.mark.slow
def test_a_keras2_mode_script_fitting_a_keras3_model_fails_at_its_fit_call(
    tmp_path: Path,
) -> None:
    """In Keras 2 mode, Keras 3's ``fit`` would train the model unseen by PEDL: it fails with
    what to change, at the script's line."""
    (tmp_path / "train.py").write_text(KERAS3_SCRIPT)
    (tmp_path / "const.yaml").write_text(
        "entrypoint: train.py\nsearcher: {name: single, metric: loss, max_length: {batches: 4}}\n"
    )
    done = subprocess.run(
        [sys.executable, "-c", ATTEMPT, str(tmp_path)],
        capture_output=True,
        text=True,
        env={**os.environ, "TF_USE_LEGACY_KERAS": "1", "PYTHONPATH": str(ROOT)},
        timeout=scaled(300),
        cwd=tmp_path,
    )
    lines = [line for line in done.stdout.splitlines() if line.startswith("RESULT ")]
    assert done.returncode == 0 and lines, done.stderr[-3000:]
    outcome, kind, message, location = json.loads(lines[-1][len("RESULT ") :])
    assert (outcome, kind, location) == ("ERRORED", "ScriptError", "train.py:8")
    assert "it is a Keras 3 object (`import keras`) and this trial runs in Keras 2 mode" in message


@pytest.fixture(scope="module")
def master(tmp_path_factory: pytest.TempPathFactory) -> Iterator[MasterProcess]:
    process = MasterProcess(tmp_path_factory.mktemp("master"), env={"PEDL_AUTH": "false"}).start()
    try:
        yield process
    finally:
        process.stop()


@pytest.mark.slow
def test_keras2_script_paused_and_activated_on_the_master(master: MasterProcess) -> None:
    http = master.http
    config = (MODEL / "const.yaml").read_text().replace("--epochs 3", "--epochs 6")
    hold = "  environment_variables: [PEDL_TEST_HOLD_FOR_PAUSE=1]\n"
    config = config.replace("hyperparameters:", hold + "hyperparameters:")
    experiment_id = create_experiment(http, config, MODEL)
    deadline = time.monotonic() + scaled(60)
    while not trials(http, experiment_id):
        assert time.monotonic() < deadline, master.log()[-3000:]
        time.sleep(0.1)
    (trial,) = trials(http, experiment_id)
    wait_trial(http, trial["id"], lambda t: t.get("latest_checkpoint_uuid"), timeout=120)
    assert http.post(f"/experiments/{experiment_id}/pause").status_code == 200
    while "stopped: PREEMPTED" not in logs(http, trial["id"]):
        assert time.monotonic() < deadline + 120, logs(http, trial["id"])
        time.sleep(0.1)
    assert http.post(f"/experiments/{experiment_id}/activate").status_code == 200
    wait_for(http, experiment_id, {"COMPLETED"}, timeout=240, master=master)
    text = logs(http, trial["id"])
    assert "Keras 2 mode (TF_USE_LEGACY_KERAS=1): environment.image " + IMAGE in text
    assert "resuming at epoch" in text
    rows = [(b, m) for kind, b, m in metric_rows(http, trial["id"]) if kind == "validation"]
    assert [b for b, _ in rows] == [4, 8, 12, 16, 20, 24]


@pytest.mark.slow
def test_keras2_adaptive_search_on_the_master(master: MasterProcess) -> None:
    http = master.http
    experiment_id = create_experiment(http, (MODEL / "adaptive.yaml").read_text(), MODEL)
    wait_for(http, experiment_id, {"COMPLETED"}, timeout=300, master=master)
    found = trials(http, experiment_id)
    assert len(found) == 4 and all(t["state"] == "COMPLETED" for t in found), found
    for t in found:
        rows = [m for kind, _, m in metric_rows(http, t["id"]) if kind == "validation"]
        assert rows and all("categorical_accuracy" in m for m in rows)


@pytest.mark.slow
def test_keras2_script_on_two_slots_on_the_master(master: MasterProcess) -> None:
    # 0.38's iris_tf_keras/distributed.yaml form: the script builds its model under the
    # MultiWorkerMirroredStrategy from_tf_config() gives and trains with Keras 2's own fit.
    http = master.http
    experiment_id = create_experiment(http, (MODEL / "distributed.yaml").read_text(), MODEL)
    wait_for(http, experiment_id, {"COMPLETED"}, timeout=300, master=master)
    (trial,) = trials(http, experiment_id)
    text = logs(http, trial["id"])
    assert trial["restarts"] == 0, text[-4000:]  # no worker failed (a restart would hide it)
    assert "Keras 2 mode (TF_USE_LEGACY_KERAS=1): environment.image " + IMAGE in text
    assert f"trial {trial['id']} worker stopped: STOPPED_EARLY" in text  # the second worker
    rows = [(b, m) for kind, b, m in metric_rows(http, trial["id"]) if kind == "validation"]
    # 120 records in global batches of 30 (15 a worker), 3 epochs: fit's own length.
    assert [b for b, _ in rows] == [4, 8, 12]
    assert all("categorical_accuracy" in m for _, m in rows)
    # The searcher metric as distributed.yaml names it.
    accuracies = [m["val_categorical_accuracy"] for _, m in rows]
    assert trial["best_validation"] == max(accuracies) > 0.5
    assert trial["latest_checkpoint_uuid"]
