"""PEDL 0.x model definitions (``build_model(hparams)``, ``make_data_loaders``) still train."""

from __future__ import annotations

import textwrap
from pathlib import Path

import pytest

from pedl.local import LocalExperiment
from pedl.vocabulary import MetricKind
from tests import local_record as record

LEGACY_MODEL = """
import json
import os

from pedl.keras._keras import keras
import numpy as np
import tensorflow as tf

import pedl.callback
from pedl.frameworks.keras import TFKerasTrial, wrap_dataset
from pedl.frameworks.tensorflow import TensorBoard


def make_data_loaders(experiment_config, hparams):
    rng = np.random.default_rng(0)
    x = rng.normal(size=(96, 4)).astype("float32")
    y = (x[:, 0] > 0).astype("int32")
    batch = hparams["global_batch_size"]
    train = wrap_dataset(tf.data.Dataset.from_tensor_slices((x, y)).batch(batch))
    if experiment_config["data"]["validation"] == "arrays":
        return train, (x[:32], y[:32])
    return train, wrap_dataset(tf.data.Dataset.from_tensor_slices((x[:32], y[:32])).batch(batch))


class Record(pedl.callback.Callback):
    def __init__(self, path):
        self.path = path

    def _log(self, *event):
        with open(self.path, "a") as f:
            f.write(json.dumps(event) + "\\n")

    def on_trial_begin(self):
        self._log("trial_begin")

    def on_train_step_begin(self, step_id):
        self._log("train_step_begin", step_id)

    def on_train_step_end(self, step_id, metrics):
        mean_loss = sum(m["loss"] for m in metrics) / len(metrics)
        self._log("train_step_end", step_id, len(metrics), sorted(metrics[0]), mean_loss)

    def on_validation_step_begin(self, step_id):
        self._log("validation_step_begin", step_id)

    def on_validation_step_end(self, step_id, metrics):
        self._log("validation_step_end", step_id, sorted(metrics))


class LegacyTrial(TFKerasTrial):
    def build_model(self, hparams):
        model = keras.Sequential([
            keras.Input((4,)),
            keras.layers.Dense(hparams["units"], activation="relu"),
            keras.layers.Dense(2, activation="softmax"),
        ])
        model.compile("adam", "sparse_categorical_crossentropy", metrics=["accuracy"])
        return model

    def callbacks(self, hparams):
        return [Record(os.environ["LEGACY_EVENTS"]), TensorBoard(os.environ["LEGACY_TB"])]
"""

CONFIG = """
data: {validation: VALIDATION}
hyperparameters: {global_batch_size: 16, units: 8}
searcher: {name: single, metric: val_accuracy, smaller_is_better: false, max_steps: 3}
batches_per_step: 4
environment:
  environment_variables: [LEGACY_EVENTS=@events@, LEGACY_TB=@tb@]
reproducibility: {experiment_seed: 2}
"""


def run(tmp_path: Path, validation: str) -> tuple[LocalExperiment, list[list[object]]]:
    import json

    model = tmp_path / "model"
    model.mkdir()
    (model / "__init__.py").write_text(LEGACY_MODEL)
    config = tmp_path / "legacy.yaml"
    config.write_text(
        textwrap.dedent(CONFIG)
        .replace("VALIDATION", validation)
        .replace("@events@", str(tmp_path / "events.jsonl"))
        .replace("@tb@", str(tmp_path / "tb"))
    )
    exp = LocalExperiment.create(config, model, tmp_path / "out")
    summary = exp.run()
    assert summary.state == "COMPLETED", [t.error for t in summary.trials]
    events = [json.loads(line) for line in (tmp_path / "events.jsonl").read_text().splitlines()]
    return exp, events


def tensorboard_scalars(directory: Path, tag: str) -> dict[int, float]:
    """The scalar ``tag`` of the event files in ``directory``, by step."""
    import tensorflow as tf

    points = {}
    for path in sorted(directory.iterdir()):
        for event in tf.compat.v1.train.summary_iterator(str(path)):
            for value in event.summary.value:
                if value.tag == tag:
                    points[event.step] = float(tf.make_ndarray(value.tensor))
    return points


@pytest.mark.keras2  # also in Keras 2 mode (make test)
def test_legacy_trial_with_make_data_loaders_and_callbacks(tmp_path: Path) -> None:
    exp, events = run(tmp_path, "dataset")
    # max_steps 3 of batches_per_step 4 = 12 batches, in three steps.
    training = record.metric_rows(exp.directory, 1, MetricKind.TRAINING)
    assert [batches for _, batches, _ in training] == [4, 8, 12]
    validation = record.metric_rows(exp.directory, 1, MetricKind.VALIDATION)
    assert [batches for _, batches, _ in validation] == [12]
    # One metrics dict per batch of the step (4), each that batch's own; the step's reported
    # training loss is their mean.
    losses = [metrics["loss"] for _, _, metrics in training]
    assert [e[:4] for e in events if e[0] == "train_step_end"] == [
        ["train_step_end", step, 4, ["accuracy", "loss"]] for step in (1, 2, 3)
    ]
    assert [e[4] for e in events if e[0] == "train_step_end"] == pytest.approx(losses)
    assert [e[:2] if e[0] != "validation_step_end" else e for e in events] == [
        ["trial_begin"],
        ["train_step_begin", 1],
        ["train_step_end", 1],
        ["train_step_begin", 2],
        ["train_step_end", 2],
        ["train_step_begin", 3],
        ["train_step_end", 3],
        ["validation_step_begin", 3],
        ["validation_step_end", 3, ["val_accuracy", "val_loss"]],
    ]
    # TensorBoard's training point of a step is the step's reported (mean) loss.
    assert tensorboard_scalars(tmp_path / "tb" / "1" / "training", "loss") == pytest.approx(
        dict(zip((1, 2, 3), losses, strict=True))
    )
    assert list(tensorboard_scalars(tmp_path / "tb" / "1" / "validation", "val_loss")) == [3]
    exp.close()


@pytest.mark.keras2  # also in Keras 2 mode (make test)
@pytest.mark.slow
def test_legacy_trial_on_two_workers(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    import numpy as np

    from tests.keras.multiworker import run_workers

    model = tmp_path / "model"
    model.mkdir()
    (model / "__init__.py").write_text(LEGACY_MODEL)
    config = textwrap.dedent(CONFIG).replace("VALIDATION", "dataset")
    (model / "legacy.yaml").write_text(config + "resources: {slots_per_trial: 2}\n")
    monkeypatch.setenv("LEGACY_EVENTS", str(tmp_path / "events.jsonl"))
    monkeypatch.setenv("LEGACY_TB", str(tmp_path / "tb"))
    job = {
        "model_dir": str(model),
        "config": "legacy.yaml",
        "hparams": {"global_batch_size": 16, "units": 8},
    }
    chief, other = run_workers(job, tmp_path / "run", 2)
    assert chief["outcome"] == other["outcome"] == "COMPLETED", (chief["error"], other["error"])
    assert chief["weights"]
    for a, b in zip(chief["weights"], other["weights"], strict=True):
        np.testing.assert_array_equal(a, b)
    assert [(kind, b) for kind, b in chief["writes"]] == [
        (MetricKind.TRAINING, 4),
        (MetricKind.TRAINING, 8),
        (MetricKind.TRAINING, 12),
        (MetricKind.VALIDATION, 12),
    ]
    assert other["writes"] == []


def test_legacy_validation_arrays(tmp_path: Path) -> None:
    exp, _ = run(tmp_path, "arrays")
    exp.close()


def test_legacy_trial_without_make_data_loaders_fails_clearly(tmp_path: Path) -> None:
    model = tmp_path / "model"
    model.mkdir()
    (model / "__init__.py").write_text(LEGACY_MODEL.replace("def make_data_loaders", "def other"))
    config = tmp_path / "legacy.yaml"
    config.write_text(
        textwrap.dedent(CONFIG).replace("VALIDATION", "arrays").replace("@", "x")
        + "max_restarts: 0\n"
    )
    exp = LocalExperiment.create(config, model, tmp_path / "out")
    summary = exp.run()
    (trial,) = summary.trials
    assert trial.state == "ERROR"
    assert trial.error is not None and trial.error.before_progress
    assert "must also define make_data_loaders(experiment_config, hparams)" in trial.error.message
    exp.close()
