"""PEDL's Keras callbacks: EarlyStopping, ReduceLROnPlateau and TensorBoard, across a resume."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import numpy as np
import pytest

from pedl import TrialOutcome
from pedl.keras._keras import LEGACY, keras
from pedl.keras.callbacks import EarlyStopping, ReduceLROnPlateau, TensorBoard

from .harness import make_run, train
from .trials import SmallTrial

VALIDATE_EVERY_2 = ("min_validation_period.batches=2", "scheduling_unit=2")


def with_callbacks(*factories: Any) -> type:
    class T(SmallTrial):
        def keras_callbacks(self) -> list[Any]:
            return [f() for f in factories]

    return T


def test_early_stopping_checks_after_each_validation(tmp_path: Path) -> None:
    # min_delta so large that no validation counts as an improvement after the first.
    trial = with_callbacks(lambda: EarlyStopping(monitor="val_loss", min_delta=100.0, patience=1))
    run = make_run(tmp_path, overrides=("searcher.max_length.batches=40", *VALIDATE_EVERY_2))
    assert train(trial, run) is TrialOutcome.STOPPED_EARLY
    # The best is at 2; 4 brings no improvement, so wait reaches patience (1): stop at 4.
    assert run.recorder.batches("validation") == [2, 4]
    assert (run.session.completed, run.session.lengths) == ([], [40])


def test_early_stopping_state_survives_a_pause(tmp_path: Path) -> None:
    def make() -> EarlyStopping:
        return EarlyStopping(monitor="val_loss", min_delta=100.0, patience=2)

    boundaries = iter(range(100))
    first = make_run(
        tmp_path,
        overrides=("searcher.max_length.batches=40", *VALIDATE_EVERY_2),
        preempt=lambda: next(boundaries) == 1,  # pause at batch 4, after two validations
    )
    assert train(with_callbacks(make), first) is TrialOutcome.PREEMPTED
    second = make_run(
        tmp_path,
        overrides=("searcher.max_length.batches=40", *VALIDATE_EVERY_2),
        latest_checkpoint=first.recorder.checkpoints[-1][0],
        recorder=first.recorder,
    )
    assert train(with_callbacks(make), second) is TrialOutcome.STOPPED_EARLY
    # Best at 2, wait 1 at 4 (then the pause), wait 2 at 6: stop. Without the restored state
    # the resumed run would start counting again and stop only at 10.
    assert first.recorder.batches("validation") == [2, 4, 6]


def test_reduce_lr_on_plateau_lowers_the_learning_rate(tmp_path: Path) -> None:
    models: list[keras.Model] = []

    class T(SmallTrial):
        def build_model(self) -> keras.Model:
            models.append(super().build_model())
            return models[-1]

        def keras_callbacks(self) -> list[Any]:
            return [ReduceLROnPlateau(monitor="val_loss", min_delta=100.0, patience=0, factor=0.5)]

    run = make_run(tmp_path, overrides=("searcher.max_length.batches=6", *VALIDATE_EVERY_2))
    train(T, run)
    # Validations at 2, 4, 6: the first sets the best, the next two each halve 0.02.
    lr = float(np.asarray(models[0].optimizer.learning_rate))
    assert abs(lr - 0.005) < 1e-9


@pytest.mark.keras2  # also in Keras 2 mode (make test)
def test_tensorboard_writes_to_the_trial_directory_and_keeps_counting(tmp_path: Path) -> None:
    boards: list[TensorBoard] = []

    def make() -> TensorBoard:
        boards.append(TensorBoard(log_dir="/ignored", update_freq="batch"))
        return boards[-1]

    boundaries = iter(range(100))
    first = make_run(
        tmp_path,
        overrides=("searcher.max_length.batches=8", "scheduling_unit=3"),
        preempt=lambda: next(boundaries) == 0,
    )
    train(with_callbacks(make), first)
    assert boards[0].log_dir == str(tmp_path / "tensorboard")
    assert list((tmp_path / "tensorboard" / "train").iterdir())
    assert not Path("/ignored").exists()
    second = make_run(
        tmp_path,
        overrides=("searcher.max_length.batches=8", "scheduling_unit=3"),
        latest_checkpoint=first.recorder.checkpoints[-1][0],
        recorder=first.recorder,
    )
    train(with_callbacks(make), second)
    # Continued from 3, not restarted at 0 (Keras 2's batch step is the model's counter).
    step = int(boards[1]._train_step) if LEGACY else boards[1]._global_train_batch
    assert step == 8


def test_early_stopping_restores_the_best_weights_across_a_pause(tmp_path: Path) -> None:
    seen: list[list[np.ndarray]] = []

    class Record(keras.callbacks.Callback):
        def on_test_end(self, logs: dict[str, Any] | None = None) -> None:
            seen.append([np.array(w) for w in self.model.get_weights()])

    def make() -> EarlyStopping:
        return EarlyStopping(
            monitor="val_loss", min_delta=100.0, patience=2, restore_best_weights=True
        )

    overrides = ("searcher.max_length.batches=40", *VALIDATE_EVERY_2)
    boundaries = iter(range(100))
    first = make_run(tmp_path, overrides=overrides, preempt=lambda: next(boundaries) == 1)
    assert train(with_callbacks(Record, make), first) is TrialOutcome.PREEMPTED
    second = make_run(
        tmp_path,
        overrides=overrides,
        latest_checkpoint=first.recorder.checkpoints[-1][0],
        recorder=first.recorder,
    )
    assert train(with_callbacks(Record, make), second) is TrialOutcome.STOPPED_EARLY
    assert first.recorder.batches("validation") == [2, 4, 6]
    # The best validation was the first (batch 2, before the pause): the final checkpoint
    # holds its weights, not those of batch 6.
    models: list[keras.Model] = []

    class Plain(SmallTrial):  # the same callback slot, without restoring anything itself
        def build_model(self) -> keras.Model:
            models.append(super().build_model())
            return models[-1]

        def keras_callbacks(self) -> list[Any]:
            return [EarlyStopping(monitor="val_loss", patience=100)]

    third = make_run(
        tmp_path,
        overrides=("searcher.max_length.batches=6", *VALIDATE_EVERY_2),
        latest_checkpoint=first.recorder.checkpoints[-1][0],
        recorder=first.recorder,
    )
    train(Plain, third)
    restored = models[-1].get_weights()
    assert not all(np.array_equal(a, b) for a, b in zip(seen[2], seen[0], strict=True))
    for got, best in zip(restored, seen[0], strict=True):
        np.testing.assert_array_equal(got, best)
