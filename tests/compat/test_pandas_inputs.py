"""pandas ``DataFrame``/``Series`` data, as older Determined model definitions return it: the
same training as the arrays, and resumed exactly after a pause."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import keras
import numpy as np
import pandas as pd

from pedl import TrialOutcome
from pedl.keras import InMemorySequence
from tests.keras.harness import make_run, train
from tests.keras.trials import SmallTrial, blobs

OVERRIDES = ("searcher.max_length.batches=14", "scheduling_unit=4")


def recording(base: type) -> tuple[type, list[keras.Model]]:
    models: list[keras.Model] = []

    class T(base):  # type: ignore[misc]
        def build_model(self) -> keras.Model:
            models.append(super().build_model())
            return models[-1]

    return T, models


class PandasTrial(SmallTrial):
    """Training data as a DataFrame and a Series; validation as a DataFrame and an array."""

    def build_training_data_loader(self) -> Any:
        x, y = blobs(100, 0)
        return pd.DataFrame(x, columns=list("abcd")), pd.Series(y)

    def build_validation_data_loader(self) -> Any:
        x, y = blobs(40, 1)
        return pd.DataFrame(x, columns=list("abcd")), y


def test_dataframe_trial_trains_as_arrays_and_resumes_exactly(tmp_path: Path) -> None:
    arrays, array_models = recording(SmallTrial)
    reference = make_run(tmp_path / "arrays", overrides=OVERRIDES)
    assert train(arrays, reference) is TrialOutcome.COMPLETED

    frames, frame_models = recording(PandasTrial)
    boundaries = iter(range(100))
    first = make_run(
        tmp_path / "pandas", overrides=OVERRIDES, preempt=lambda: next(boundaries) == 1
    )
    assert train(frames, first) is TrialOutcome.PREEMPTED
    second = make_run(
        tmp_path / "pandas",
        overrides=OVERRIDES,
        latest_checkpoint=first.recorder.checkpoints[-1][0],
        recorder=first.recorder,
    )
    assert train(frames, second) is TrialOutcome.COMPLETED
    assert first.recorder.batches("validation") == reference.recorder.batches("validation")
    for got, want in zip(
        frame_models[-1].get_weights(), array_models[-1].get_weights(), strict=True
    ):
        np.testing.assert_array_equal(got, want)


class ArraySequenceTrial(SmallTrial):
    """The 2020-era iris form: ``InMemorySequence(data=..., labels=..., batch_size=...)``."""

    def frame(self, x: np.ndarray) -> Any:
        return x

    def build_training_data_loader(self) -> Any:
        x, y = blobs(100, 0)
        batch = self.context.get_per_slot_batch_size()
        return InMemorySequence(data=self.frame(x), labels=self.label(y), batch_size=batch)

    def build_validation_data_loader(self) -> Any:
        x, y = blobs(40, 1)
        batch = self.context.get_per_slot_batch_size()
        return InMemorySequence(data=self.frame(x), labels=y, batch_size=batch)

    def label(self, y: np.ndarray) -> Any:
        return y


class FrameSequenceTrial(ArraySequenceTrial):
    """The same with a DataFrame and a Series, as the examples read them from CSV."""

    def frame(self, x: np.ndarray) -> Any:
        return pd.DataFrame(x, columns=list("abcd"))

    def label(self, y: np.ndarray) -> Any:
        return pd.Series(y)


def test_in_memory_sequence_of_dataframes_trains_as_of_arrays(tmp_path: Path) -> None:
    arrays, array_models = recording(ArraySequenceTrial)
    reference = make_run(tmp_path / "arrays", overrides=OVERRIDES)
    assert train(arrays, reference) is TrialOutcome.COMPLETED
    frames, frame_models = recording(FrameSequenceTrial)
    run = make_run(tmp_path / "frames", overrides=OVERRIDES)
    assert train(frames, run) is TrialOutcome.COMPLETED
    assert run.recorder.batches("validation") == reference.recorder.batches("validation")
    for got, want in zip(
        frame_models[-1].get_weights(), array_models[-1].get_weights(), strict=True
    ):
        np.testing.assert_array_equal(got, want)
