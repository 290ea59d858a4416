"""The controller's schedule, its checkpoints, exact resume in-process, and its errors."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import numpy as np
import pytest

import pedl._trial_error
import pedl.tensorflow
from pedl import TrialOutcome
from pedl.keras import TrialError, load_model_from_checkpoint_path
from pedl.keras._keras import LEGACY, keras
from pedl.keras._state import VARIABLES_FILE

from .harness import Run, make_run, train
from .trials import SmallTrial


def final_variables(run: Run) -> bytes:
    storage_id, _ = run.recorder.checkpoints[-1]
    return (run.storage.path_of(storage_id) / "state" / VARIABLES_FILE).read_bytes()


def test_chunks_validations_and_checkpoints_follow_the_config(tmp_path: Path) -> None:
    run = make_run(
        tmp_path,
        overrides=(
            "searcher.max_length.batches=30",
            "scheduling_unit=7",
            "min_validation_period.batches=10",
            "min_checkpoint_period.batches=12",
            "checkpoint_policy=none",
        ),
    )
    assert train(SmallTrial, run) is TrialOutcome.COMPLETED
    # A chunk ends after 7 batches, or sooner where a validation (10, 20, 30) or a checkpoint
    # (12, 24) falls due; the next chunk starts there.
    assert run.recorder.batches("training") == [7, 10, 12, 19, 20, 24, 30]
    assert run.recorder.batches("validation") == [10, 20, 30]
    assert [b for _, b in run.recorder.checkpoints] == [12, 24, 30]
    assert run.session.completed[0][0] == 30


def test_lengths_in_records_and_epochs_convert_with_the_batch_size(tmp_path: Path) -> None:
    config = """
hyperparameters: {global_batch_size: 16}
records_per_epoch: 80
searcher: {name: single, metric: val_loss, max_length: {epochs: 2}}
min_validation_period: {records: 48}
scheduling_unit: 100
"""
    run = make_run(tmp_path, config)
    train(SmallTrial, run)
    # 2 epochs of 80 records at 16 per batch = 10 batches; validation every 3 batches.
    assert run.recorder.batches("validation") == [3, 6, 9, 10]
    assert run.session.completed[0][0] == 2


def test_several_operations_continue_the_same_training(tmp_path: Path) -> None:
    run = make_run(tmp_path, lengths=[6, 15], overrides=("scheduling_unit=5",))
    train(SmallTrial, run)
    assert [length for length, _ in run.session.completed] == [6, 15]
    assert run.recorder.batches("training") == [5, 6, 11, 15]
    assert run.recorder.batches("validation") == [6, 15]


def test_initial_validation_and_policy_all(tmp_path: Path) -> None:
    run = make_run(
        tmp_path,
        overrides=(
            "perform_initial_validation=true",
            "checkpoint_policy=all",
            "min_validation_period.batches=4",
            "searcher.max_length.batches=8",
        ),
    )
    train(SmallTrial, run)
    assert run.recorder.batches("validation") == [0, 4, 8]
    assert [b for _, b in run.recorder.checkpoints] == [0, 4, 8]


@pytest.mark.keras2  # also in Keras 2 mode (make test)
def test_checkpoint_holds_everything_resume_needs(tmp_path: Path) -> None:
    run = make_run(tmp_path, overrides=("searcher.max_length.batches=5",))
    train(SmallTrial, run)
    storage_id, batches = run.recorder.checkpoints[-1]
    path = run.storage.path_of(storage_id)
    metadata = json.loads((path / "metadata.json").read_text())
    assert metadata["steps_completed"] == batches == 5
    assert metadata["framework"] == "tensorflow-keras"
    assert metadata["format"] == "pedl.keras/1"
    assert metadata["hparams"] == {"global_batch_size": 16}
    assert metadata["pedl_version"]
    assert (path / "code" / "model.py").read_text() == "# the model definition\n"
    state = {p.name for p in (path / "state").iterdir()}
    assert {"variables.bin", "variables.json", "rng.pkl", "trial_state.json"} <= state
    index = json.loads((path / "state" / "variables.json").read_text())
    paths = [entry["path"] for entry in index]
    # Dropout's RNG state (Keras 2: its tf.random.Generator's)
    assert any(("StateVar" if LEGACY else "seed_generator") in p for p in paths), paths
    # Adam's state (Keras 2 names its slots m/<weight>, v/<weight>)
    assert any(p.startswith("m/" if LEGACY else "adam/") for p in paths), paths
    assert not list(run.storage.base_path.glob(".tmp-*"))


def test_preempted_trial_resumes_bitwise_exactly(tmp_path: Path) -> None:
    overrides = ("searcher.max_length.batches=40", "scheduling_unit=6", "checkpoint_policy=none")
    baseline = make_run(tmp_path / "a", overrides=overrides)
    train(SmallTrial, baseline)

    boundaries = iter(range(100))
    first = make_run(tmp_path / "b", overrides=overrides, preempt=lambda: next(boundaries) == 3)
    assert train(SmallTrial, first) is TrialOutcome.PREEMPTED
    stopped_at = first.recorder.checkpoints[-1][1]
    assert 0 < stopped_at < 40
    second = make_run(
        tmp_path / "b",
        overrides=overrides,
        latest_checkpoint=first.recorder.checkpoints[-1][0],
        recorder=first.recorder,
    )
    assert train(SmallTrial, second) is TrialOutcome.COMPLETED
    assert final_variables(second) == final_variables(baseline)
    assert first.recorder.metrics == baseline.recorder.metrics
    # The resumed run reported each chunk once: nothing before the checkpoint twice.
    assert len(first.recorder.writes) == len(set(first.recorder.writes))


@pytest.mark.keras2  # also in Keras 2 mode (make test)
def test_load_model_from_checkpoint_path(tmp_path: Path) -> None:
    run = make_run(tmp_path, overrides=("searcher.max_length.batches=5",))
    code = tmp_path / "code"
    (code / "__init__.py").write_text("from .model import SmallTrialCopy\n")
    (code / "model.py").write_text(
        "from tests.keras.trials import SmallTrial\n\nclass SmallTrialCopy(SmallTrial):\n    pass\n"
    )
    controller_model: list[keras.Model] = []

    class Capture(SmallTrial):
        def build_model(self) -> keras.Model:
            controller_model.append(super().build_model())
            return controller_model[-1]

    train(Capture, run)
    path = run.storage.path_of(run.recorder.checkpoints[-1][0])
    model = load_model_from_checkpoint_path(path)
    for loaded, trained in zip(model.variables, controller_model[0].variables, strict=True):
        np.testing.assert_array_equal(np.asarray(loaded), np.asarray(trained))
    assert model.predict(np.zeros((2, 4), "float32"), verbose=0).shape == (2, 2)


def test_missing_searcher_metric_fails_the_trial_clearly(tmp_path: Path) -> None:
    run = make_run(tmp_path, overrides=("searcher.metric=val_acc", "searcher.max_length.batches=3"))
    with pytest.raises(TrialError, match=r"'val_acc' is not among .*val_accuracy, val_loss"):
        train(SmallTrial, run)


def test_every_framework_raises_the_one_trial_error() -> None:
    assert TrialError is pedl.tensorflow.TrialError is pedl._trial_error.TrialError
    assert issubclass(TrialError, RuntimeError)


def test_uncompiled_model_is_an_error(tmp_path: Path) -> None:
    class Uncompiled(SmallTrial):
        def build_model(self) -> keras.Model:
            return self.context.wrap_model(
                keras.Sequential([keras.Input((4,)), keras.layers.Dense(2)])
            )

    with pytest.raises(TrialError, match="not compiled"):
        train(Uncompiled, make_run(tmp_path))


def test_build_model_must_return_a_model(tmp_path: Path) -> None:
    class NotAModel(SmallTrial):
        def build_model(self) -> Any:
            return "model"

    with pytest.raises(TrialError, match=r"returned str, expected a keras\.Model"):
        train(NotAModel, make_run(tmp_path))


def test_stop_training_from_a_callback_ends_the_trial_gracefully(tmp_path: Path) -> None:
    class StopAt7(keras.callbacks.Callback):  # type: ignore[misc]
        def __init__(self) -> None:
            super().__init__()
            self.batches = 0

        def on_train_batch_end(self, batch: int, logs: Any = None) -> None:
            self.batches += 1
            if self.batches == 7:
                self.model.stop_training = True

    class Stopping(SmallTrial):
        def keras_callbacks(self) -> list[Any]:
            return [StopAt7()]

    run = make_run(tmp_path, overrides=("searcher.max_length.batches=50", "scheduling_unit=5"))
    assert train(Stopping, run) is TrialOutcome.STOPPED_EARLY
    assert run.recorder.batches("training") == [5, 7]
    assert run.recorder.batches("validation") == [7]
    assert run.recorder.checkpoints[-1][1] == 7
    # The searcher hears of the stop from the reported outcome, not from the controller.
    assert (run.session.completed, run.session.lengths) == ([], [50])


def test_session_config_threads_are_applied(tmp_path: Path) -> None:
    import tensorflow as tf

    class Threads(SmallTrial):
        def session_config(self) -> tf.compat.v1.ConfigProto:
            return tf.compat.v1.ConfigProto(allow_soft_placement=False)

    train(Threads, make_run(tmp_path, overrides=("searcher.max_length.batches=2",)))
    assert tf.config.get_soft_device_placement() is False
    tf.config.set_soft_device_placement(True)
