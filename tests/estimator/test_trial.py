"""EstimatorTrial in its TensorFlow 2.15 environment: chunks, validation, checkpoints with one
SavedModel per key, resume, PEDL 0.x's form, the smoke test and a local run.

Collected only where ``tf.estimator`` imports (see conftest.py).
"""

from __future__ import annotations

import json
import shutil
import textwrap
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import numpy as np
import pytest
import tensorflow as tf

import pedl._trial_error
from pedl import core, model_def
from pedl.config import parse_config
from pedl.estimator import (
    EstimatorTrialController,
    TrialError,
    load_estimator_from_checkpoint_path,
)
from pedl.local import LocalExperiment, smoke_test
from pedl.storage import SharedFSStorage
from pedl.vocabulary import MetricKind, TrialOutcome

from .conftest import EXAMPLE

pytestmark = pytest.mark.filterwarnings("ignore::DeprecationWarning")

CONFIG: dict[str, Any] = {
    "hyperparameters": {"global_batch_size": 16, "learning_rate": 0.05},
    "searcher": {
        "name": "single",
        "metric": "accuracy",
        "smaller_is_better": False,
        "max_length": {"batches": 20},
    },
    "scheduling_unit": 5,
    "min_validation_period": {"batches": 10},
    "min_checkpoint_period": {"batches": 10},
    "reproducibility": {"experiment_seed": 3},
}


@dataclass
class Run:
    outcome: TrialOutcome
    controller: EstimatorTrialController
    records: core.MemoryBackend
    storage: SharedFSStorage


def run_trial(
    tmp: Path,
    length: int,
    *,
    model: Path = EXAMPLE,
    config: dict[str, Any] = CONFIG,
    latest: tuple[Run, str] | None = None,
    preempt_after: int | None = None,
    warm_start: str | None = None,
) -> Run:
    """Run the trial in this process until the searcher's ``length`` (or a preemption after
    ``preempt_after`` boundaries), on ``latest``'s storage and records when resuming."""
    records = latest[0].records if latest else core.MemoryBackend()
    storage = latest[0].storage if latest else SharedFSStorage(tmp / "checkpoints")
    asked = 0

    def should_preempt() -> bool:
        nonlocal asked
        asked += 1
        return preempt_after is not None and asked > preempt_after

    parsed = parse_config(config)
    info = core.TrialInfo(
        trial_id=1,
        experiment_id=1,
        hparams=dict(config["hyperparameters"]),
        trial_seed=11,
        config=parsed,
        code_dir=model,
        latest_checkpoint=latest[1] if latest else None,
        warm_start_checkpoint=warm_start,
    )
    records.lengths = [length]
    records.preempt = should_preempt
    context = core.build_context(info, backend=records, storage=storage)
    definition = model_def.load(model)
    controller = EstimatorTrialController.from_definition(definition, context)
    return Run(controller.run(), controller, records, storage)


def rows(records: core.MemoryBackend, kind: MetricKind) -> list[tuple[int, dict[str, float]]]:
    return [(b, records.metrics[(kind, b)]) for b in records.batches(kind)]


@pytest.fixture(scope="module")
def uninterrupted(tmp_path_factory: pytest.TempPathFactory) -> Run:
    return run_trial(tmp_path_factory.mktemp("uninterrupted"), 20)


@pytest.mark.slow
def test_trains_in_chunks_validates_and_checkpoints_with_saved_models(
    uninterrupted: Run,
) -> None:
    run = uninterrupted
    assert run.outcome is TrialOutcome.COMPLETED
    training = rows(run.records, MetricKind.TRAINING)
    assert [b for b, _ in training] == [5, 10, 15, 20]
    assert all(set(m) >= {"loss"} and np.isfinite(m["loss"]) for _, m in training)
    validation = rows(run.records, MetricKind.VALIDATION)
    assert [b for b, _ in validation] == [10, 20]
    assert {"accuracy", "average_loss", "loss"} <= set(validation[-1][1])
    assert "global_step" not in validation[-1][1]
    assert [b for _, b in run.records.checkpoints] == [10, 20]
    for storage_id, batches in run.records.checkpoints:
        path = run.storage.path_of(storage_id)
        metadata = json.loads((path / "metadata.json").read_text())
        assert metadata["format"] == "pedl.estimator/1"
        assert metadata["global_step"] == batches == metadata["steps_completed"]
        assert metadata["model_checkpoint"] == f"model.ckpt-{batches}"
        assert tf.train.latest_checkpoint(str(path)) == str(path / f"model.ckpt-{batches}")
        assert sorted(metadata["saved_models"]) == ["parsing", "raw"]
        for key, relative in metadata["saved_models"].items():
            assert relative.startswith(f"{key}/")
            assert (path / relative / "saved_model.pb").is_file()
        assert (path / "code" / "model_def.py").is_file()
    # The raw SavedModel of the last checkpoint serves predictions.
    last = run.storage.path_of(run.records.checkpoints[-1][0])
    with pytest.raises(ValueError, match=r"several SavedModels \(parsing, raw\): choose one"):
        load_estimator_from_checkpoint_path(last)
    loaded = load_estimator_from_checkpoint_path(last, key="raw")
    features = {
        "sepal_length": [5.1, 6.7],
        "sepal_width": [3.5, 3.0],
        "petal_length": [1.4, 5.2],
        "petal_width": [0.2, 2.3],
    }
    predicted = loaded.signatures["predict"](
        **{k: tf.constant(v, tf.float32) for k, v in features.items()}
    )
    assert predicted["probabilities"].shape == (2, 3)


@pytest.mark.slow
def test_preempted_and_resumed_continues_the_global_step_with_the_same_metrics(
    tmp_path: Path, uninterrupted: Run
) -> None:
    # Boundaries are asked at 0, 5 and 10 batches: preempted at 10, after its checkpoint.
    first = run_trial(tmp_path, 20, preempt_after=2)
    assert first.outcome is TrialOutcome.PREEMPTED
    assert [b for _, b in first.records.checkpoints] == [10]
    storage_id = first.records.checkpoints[-1][0]
    resumed = run_trial(tmp_path, 20, latest=(first, storage_id))
    assert resumed.outcome is TrialOutcome.COMPLETED
    assert resumed.controller.global_step == 20
    last = resumed.storage.path_of(resumed.records.checkpoints[-1][0])
    assert json.loads((last / "metadata.json").read_text())["global_step"] == 20
    for kind in (MetricKind.TRAINING, MetricKind.VALIDATION):  # exactly (op determinism)
        assert rows(resumed.records, kind) == rows(uninterrupted.records, kind), kind


@pytest.mark.slow
def test_warm_start_takes_the_weights_of_another_trials_checkpoint(
    tmp_path: Path, uninterrupted: Run
) -> None:
    source_id = uninterrupted.records.checkpoints[-1][0]
    shutil.copytree(uninterrupted.storage.path_of(source_id), tmp_path / "checkpoints" / source_id)
    config = dict(CONFIG, perform_initial_validation=True)
    run = run_trial(tmp_path, 5, config=config, warm_start=source_id)
    assert run.outcome is TrialOutcome.COMPLETED
    assert run.controller.global_step == 5  # its own counters, from 0
    validation = rows(run.records, MetricKind.VALIDATION)
    assert [b for b, _ in validation] == [0, 5]
    # Before training, the model is the source's at its batch 20.
    assert validation[0][1] == rows(uninterrupted.records, MetricKind.VALIDATION)[-1][1]


LEGACY = """
import numpy as np
import tensorflow as tf

from pedl.estimator import EstimatorTrial, MetricReducer


def blobs(n, seed):
    rng = np.random.default_rng(seed)
    x = rng.normal(size=(n, 2)).astype("float32")
    return x, (x[:, 0] + x[:, 1] > 0).astype("int32")


class Count(MetricReducer):
    def __init__(self):
        self.count = 0

    def accumulate(self, metric):
        self.count += len(metric["labels"])
        return self.count

    def cross_slot_reduce(self, per_slot_metrics):
        return sum(per_slot_metrics)


def input_fn(x, y, batch_size):
    return lambda: tf.data.Dataset.from_tensor_slices(({"x": x}, y)).batch(batch_size)


class LegacyTrial(EstimatorTrial):
    def build_estimator(self, hparams):
        context = self.context

        def model_fn(features, labels, mode):
            w = tf.compat.v1.get_variable("w", [2, 2], initializer=tf.zeros_initializer())
            logits = tf.matmul(features["x"], w)
            classes = tf.argmax(logits, 1)
            if mode == tf.estimator.ModeKeys.PREDICT:
                return tf.estimator.EstimatorSpec(mode, predictions={"classes": classes})
            loss = tf.compat.v1.losses.sparse_softmax_cross_entropy(labels, logits)
            optimizer = context.wrap_optimizer(
                tf.compat.v1.train.GradientDescentOptimizer(hparams["lr"])
            )
            step = None if hparams.get("no_global_step") else tf.compat.v1.train.get_global_step()
            train_op = optimizer.minimize(loss, step)
            metrics = {
                "accuracy": tf.compat.v1.metrics.accuracy(labels, classes),
                "mean_label": context.make_metric(
                    labels, lambda batches: np.mean(np.hstack(batches)), np.float32
                ),
                "count": context.make_metric({"labels": labels}, Count(), np.int64),
            }
            return tf.estimator.EstimatorSpec(
                mode, loss=loss, train_op=train_op, eval_metric_ops=metrics
            )

        return tf.estimator.Estimator(model_fn)

    def build_train_spec(self, hparams):
        return tf.estimator.TrainSpec(input_fn(*blobs(64, 0), hparams["global_batch_size"]))

    def build_validation_spec(self, hparams):
        return tf.estimator.EvalSpec(input_fn(*blobs(32, 1), 8), steps=None)
"""

LEGACY_CONFIG = """
hyperparameters: {global_batch_size: 8, lr: 0.5}
searcher: {name: single, metric: accuracy, smaller_is_better: false, max_length: {batches: 6}}
scheduling_unit: 3
reproducibility: {experiment_seed: 1}
"""


def write(directory: Path, files: dict[str, str]) -> Path:
    directory.mkdir(parents=True, exist_ok=True)
    for name, text in files.items():
        (directory / name).write_text(textwrap.dedent(text))
    return directory


@pytest.mark.slow
def test_pedl_0x_form_with_a_custom_model_fn_passes_the_smoke_test(tmp_path: Path) -> None:
    model = write(tmp_path / "model", {"model_def.py": LEGACY})
    config = write(tmp_path, {"config.yaml": LEGACY_CONFIG}) / "config.yaml"
    steps = smoke_test(config, model)
    assert [s.ok for s in steps] == [True] * 4, steps
    assert steps[1].detail == "LegacyTrial"
    assert steps[2].detail.startswith("accuracy = ")


@pytest.mark.slow
def test_make_metric_reduces_every_validation_batch_in_python(tmp_path: Path) -> None:
    model = write(tmp_path / "model", {"model_def.py": LEGACY})
    config = dict(CONFIG, hyperparameters={"global_batch_size": 8, "lr": 0.5})
    run = run_trial(tmp_path, 5, model=model, config=config)
    metrics = rows(run.records, MetricKind.VALIDATION)[-1][1]
    labels = (lambda x: x[:, 0] + x[:, 1] > 0)(
        np.random.default_rng(1).normal(size=(32, 2)).astype("float32")
    )
    assert metrics["mean_label"] == pytest.approx(labels.mean())
    assert metrics["count"] == 32  # 4 batches of 8, each counted once


@pytest.mark.slow
def test_example_smoke_test_and_short_local_run(tmp_path: Path) -> None:
    steps = smoke_test(EXAMPLE / "const.yaml", EXAMPLE)
    assert [s.ok for s in steps] == [True] * 4, steps
    config = tmp_path / "short.yaml"
    text = (EXAMPLE / "const.yaml").read_text().replace("epochs: 20", "batches: 8")
    config.write_text(text.replace("epochs: 5", "batches: 8"))
    summary = LocalExperiment.create(config, EXAMPLE, tmp_path / "out").run()
    assert summary.state == "COMPLETED"
    (trial,) = summary.trials
    assert trial.state == "COMPLETED" and trial.best_metric is not None
    checkpoint = trial.best_checkpoint
    assert checkpoint is not None
    assert sorted(p.name for p in checkpoint.iterdir() if (p / "").is_dir()) == [
        "code",
        "parsing",
        "raw",
    ]


@pytest.mark.slow
def test_a_model_fn_that_leaves_the_global_step_still_trains_in_chunks(tmp_path: Path) -> None:
    model = write(tmp_path / "model", {"model_def.py": LEGACY})
    hparams = {"global_batch_size": 8, "lr": 0.5, "no_global_step": True}
    config = dict(CONFIG, hyperparameters=hparams, min_validation_period={"batches": 5})
    run = run_trial(tmp_path, 10, model=model, config=config)
    assert run.outcome is TrialOutcome.COMPLETED
    assert run.controller.global_step == 0
    validation = rows(run.records, MetricKind.VALIDATION)
    assert [b for b, _ in validation] == [5, 10]
    assert validation[0][1]["loss"] != validation[1][1]["loss"]  # each saw its own state


def test_an_estimator_trial_raises_the_trial_error_of_every_framework() -> None:
    assert TrialError is pedl._trial_error.TrialError


def test_a_serving_key_that_would_overwrite_the_checkpoint_is_refused(tmp_path: Path) -> None:
    bad = LEGACY + (
        "\n    def build_serving_input_receiver_fns(self, hparams):\n"
        "        return {'code': lambda: None}\n"
    )
    model = write(tmp_path / "model", {"model_def.py": bad})
    config = dict(CONFIG, hyperparameters={"global_batch_size": 8, "lr": 0.5})
    with pytest.raises(TrialError, match="'code' cannot name a SavedModel directory"):
        run_trial(tmp_path, 3, model=model, config=config)
