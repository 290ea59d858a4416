"""TensorFlowTrial (seed 004's form) through ``experiment create --test``, a short local run,
its 0.x callbacks, and its errors, in this process."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import numpy as np
import pytest
import tensorflow as tf

from pedl import core
from pedl.callback import Callback
from pedl.config import parse_config
from pedl.local import LocalExperiment, smoke_test
from pedl.model_def import unload
from pedl.storage import SharedFSStorage
from pedl.tensorflow import MODEL_DIR, MODEL_PREFIX, TensorFlowTrial, TrialError
from pedl.tensorflow import TensorFlowTrialController as Controller
from pedl.vocabulary import CheckpointState, MetricKind
from tests import local_record as record

MODEL = Path(__file__).parent / "tf_model"

pytestmark = pytest.mark.slow


@pytest.fixture(autouse=True)
def _unload() -> None:
    unload()


def test_smoke_test_passes() -> None:
    steps = smoke_test(MODEL / "const.yaml", MODEL)
    assert [s.ok for s in steps] == [True] * 4, steps
    assert steps[1].detail == "BlobsTrial"


def test_local_run_reports_averaged_metrics_and_saver_checkpoints(tmp_path: Path) -> None:
    experiment = LocalExperiment.create(MODEL / "const.yaml", MODEL, tmp_path)
    try:
        assert experiment.run().state == "COMPLETED"
    finally:
        experiment.close()
    directory = experiment.directory
    (trial,) = record.trials(directory)
    rows = record.metric_rows(directory, trial.id)
    assert [b for k, b, _ in rows if k == MetricKind.TRAINING] == [5, 8, 13, 16, 21, 24]
    validations = [(b, m) for k, b, m in rows if k == MetricKind.VALIDATION]
    assert [b for b, _ in validations] == [8, 16, 24]
    assert set(validations[-1][1]) == {"accuracy", "error"}
    assert validations[-1][1]["accuracy"] + validations[-1][1]["error"] == pytest.approx(1.0)
    assert validations[-1][1]["error"] < 0.3  # it learned
    kept = record.checkpoint_batches(directory)
    deleted = record.checkpoint_batches(directory, CheckpointState.DELETED)
    assert sorted(kept + deleted) == [8, 16, 24]
    assert trial.latest_checkpoint_uuid is not None
    prefix = directory / "checkpoints" / trial.latest_checkpoint_uuid / MODEL_DIR / MODEL_PREFIX
    reader = tf.train.load_checkpoint(str(prefix))
    assert reader.get_tensor("global_step") == 24
    assert reader.get_tensor("hidden/kernel").shape == (4, 8)


class Recorder(Callback):
    def __init__(self) -> None:
        self.calls: list[tuple[Any, ...]] = []

    def on_trial_begin(self) -> None:
        self.calls.append(("trial_begin",))

    def on_train_step_begin(self, step_id: int) -> None:
        self.calls.append(("train_begin", step_id))

    def on_train_step_end(self, step_id: int, metrics: list[dict[str, Any]]) -> None:
        self.calls.append(("train_end", step_id, len(metrics), sorted(metrics[0])))

    def on_validation_step_begin(self, step_id: int) -> None:
        self.calls.append(("validation_begin", step_id))

    def on_validation_step_end(self, step_id: int, metrics: dict[str, Any]) -> None:
        self.calls.append(("validation_end", step_id, sorted(metrics)))


RECORDER = Recorder()


class Linear(TensorFlowTrial):
    def optimizer(self) -> Any:
        return tf.compat.v1.train.GradientDescentOptimizer(0.1)

    def build_graph(self, record: Any, is_training: Any) -> dict[str, Any]:
        x, y = record
        w = tf.compat.v1.get_variable("w", [2, 1], initializer=tf.zeros_initializer())
        loss = tf.reduce_mean(tf.square(tf.matmul(x, w) - y))
        return {"loss": loss, "mse": loss} if self.hparams["ok"] else {"mse": loss}

    def validation_metrics(self) -> list[str]:
        return ["mse"]

    def callbacks(self, hparams: dict[str, Any]) -> list[Callback]:
        return [RECORDER]


def linear_loaders(experiment_config: dict[str, Any], hparams: dict[str, Any]) -> Any:
    x = np.arange(16, dtype="float32").reshape(8, 2) / 16
    y = x.sum(axis=1, keepdims=True)
    ds = tf.data.Dataset.from_tensor_slices((x, y)).batch(4)
    return ds, ds


def linear_context(tmp_path: Path, ok: bool, lengths: list[int]) -> core.Context:
    config = parse_config(
        {
            "searcher": {"name": "single", "metric": "mse", "max_length": {"batches": 4}},
            "scheduling_unit": 2,
            "min_validation_period": {"batches": 4},
        }
    )
    info = core.TrialInfo(
        trial_id=1,
        experiment_id=1,
        hparams={"ok": ok},
        trial_seed=1,
        config=config,
        code_dir=tmp_path,
    )
    return core.build_context(
        info,
        backend=core.MemoryBackend(lengths),
        storage=SharedFSStorage(tmp_path / "checkpoints"),
    )


def test_pedl_0x_callbacks_see_steps_with_one_metrics_dict_per_batch(tmp_path: Path) -> None:
    RECORDER.calls.clear()
    Controller(Linear, linear_loaders, linear_context(tmp_path, True, [4])).run()
    assert RECORDER.calls == [
        ("trial_begin",),
        ("train_begin", 1),
        ("train_end", 1, 2, ["loss"]),
        ("train_begin", 2),
        ("train_end", 2, 2, ["loss"]),
        ("validation_begin", 2),
        ("validation_end", 2, ["mse"]),
    ]


def test_a_graph_without_loss_is_refused_clearly(tmp_path: Path) -> None:
    with pytest.raises(TrialError, match=r'must return a dict of tensors with a "loss" entry'):
        Controller(Linear, linear_loaders, linear_context(tmp_path, False, [4]))


def test_loaders_that_are_not_datasets_are_refused_clearly(tmp_path: Path) -> None:
    def arrays(config: Any, hparams: Any) -> Any:
        return np.zeros(3), np.zeros(3)

    with pytest.raises(TrialError, match=r"returned a ndarray as the training data"):
        Controller(Linear, arrays, linear_context(tmp_path, True, [4]))
