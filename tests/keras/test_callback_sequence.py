"""Across chunks, validations and a resume, user callbacks see one long fit()."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest

from pedl import TrialOutcome
from pedl.keras.callbacks import Callback

from .harness import make_run, train
from .trials import SmallTrial

EVENTS: list[tuple[Any, ...]] = []

CONFIG = """
hyperparameters: {global_batch_size: 16}
records_per_epoch: 80
searcher: {name: single, metric: val_accuracy, smaller_is_better: false, max_length: {batches: 22}}
scheduling_unit: 4
min_validation_period: {batches: 6}
checkpoint_policy: none
reproducibility: {experiment_seed: 4}
"""
BATCHES_PER_EPOCH = 5  # 80 records per epoch / 16 per batch


class Recording(Callback):
    def on_train_begin(self, logs: Any = None) -> None:
        EVENTS.append(("train_begin",))

    def on_train_end(self, logs: Any = None) -> None:
        EVENTS.append(("train_end",))

    def on_epoch_begin(self, epoch: int, logs: Any = None) -> None:
        EVENTS.append(("epoch_begin", epoch))

    def on_epoch_end(self, epoch: int, logs: Any = None) -> None:
        EVENTS.append(("epoch_end", epoch, logs))

    def on_train_batch_begin(self, batch: int, logs: Any = None) -> None:
        EVENTS.append(("batch_begin", batch))

    def on_train_batch_end(self, batch: int, logs: Any = None) -> None:
        EVENTS.append(("batch_end", batch, sorted(logs or {})))

    def on_test_begin(self, logs: Any = None) -> None:
        EVENTS.append(("test_begin",))

    def on_test_end(self, logs: Any = None) -> None:
        EVENTS.append(("test_end", sorted(logs or {})))

    def on_train_workload_begin(self, total: int, requested: int | None, logs: Any) -> None:
        EVENTS.append(("workload_begin", total, requested))

    def on_train_workload_end(self, total: int, logs: Any) -> None:
        EVENTS.append(("workload_end", total, sorted(logs)))


class RecordingTrial(SmallTrial):
    def keras_callbacks(self) -> list[Any]:
        return [Recording()]


@pytest.mark.keras2  # also in Keras 2 mode (make test)
def test_callbacks_see_one_long_fit_across_chunks_validations_and_a_resume(
    tmp_path: Path,
) -> None:
    EVENTS.clear()
    boundaries = iter(range(100))
    first = make_run(tmp_path, CONFIG, preempt=lambda: next(boundaries) == 2)
    assert train(RecordingTrial, first) is TrialOutcome.PREEMPTED
    resumed_at = first.recorder.checkpoints[-1][1]
    assert resumed_at == 6  # preempted at the third boundary (4, 6 validation) mid-epoch 1
    second = make_run(
        tmp_path,
        CONFIG,
        latest_checkpoint=first.recorder.checkpoints[-1][0],
        recorder=first.recorder,
    )
    assert train(RecordingTrial, second) is TrialOutcome.COMPLETED

    # One on_train_begin / on_train_end per process run, around everything else.
    segments: list[list[tuple[Any, ...]]] = []
    for event in EVENTS:
        if event[0] == "train_begin":
            segments.append([])
        else:
            segments[-1].append(event)
    assert len(segments) == 2
    assert [s[-1] for s in segments] == [("train_end",), ("train_end",)]
    assert sum(e[0] == "train_end" for e in EVENTS) == 2

    # Batch hooks for every batch, once, in order, indexed within the records_per_epoch epoch.
    global_batch = 0
    open_batch = None
    epoch_open = None
    for segment in segments:
        epoch_open = None
        for event in segment:
            kind = event[0]
            if kind == "epoch_begin":
                assert open_batch is None
                assert event[1] == global_batch // BATCHES_PER_EPOCH
                epoch_open = event[1]
            elif kind == "batch_begin":
                assert open_batch is None
                assert epoch_open == global_batch // BATCHES_PER_EPOCH  # epoch began first
                assert event[1] == global_batch % BATCHES_PER_EPOCH
                open_batch = global_batch
            elif kind == "batch_end":
                assert open_batch == global_batch
                assert event[1] == global_batch % BATCHES_PER_EPOCH
                assert event[2] == ["accuracy", "loss"]
                open_batch = None
                global_batch += 1
            elif kind == "epoch_end":
                # on_epoch_end right after the last batch of each epoch, with empty logs.
                assert global_batch % BATCHES_PER_EPOCH == 0
                assert event[1:] == (global_batch // BATCHES_PER_EPOCH - 1, {})
                epoch_open = None
            elif kind in ("test_begin", "test_end", "workload_begin", "workload_end"):
                assert open_batch is None, f"{kind} inside batch {open_batch}"
    assert global_batch == 22

    # The resumed run re-opened the epoch it resumed in (batch 6 is inside epoch 1).
    assert segments[1][:2] == [("workload_begin", 6, 4), ("epoch_begin", 1)]

    # Validations only between chunks: each test_begin/test_end pair follows the last batch
    # of a chunk and matches a reported validation.
    validations = []
    count = 0
    for event in EVENTS:
        if event[0] == "batch_end":
            count += 1
        if event[0] == "test_begin":
            validations.append(count)
        if event[0] == "test_end":
            assert event[1] == ["accuracy", "loss"]
    assert validations == [6, 12, 18, 22] == first.recorder.batches("validation")

    # Chunk hooks: every chunk begins where the previous one ended.
    workloads = [e for e in EVENTS if e[0].startswith("workload")]
    ends = [e[1] for e in workloads if e[0] == "workload_end"]
    assert ends == first.recorder.batches("training") == [4, 6, 10, 12, 16, 18, 22]
    begins = [e[1] for e in workloads if e[0] == "workload_begin"]
    assert begins == [0, 4, 6, 10, 12, 16, 18]


class StateLog(Callback):
    """Determined's callback-order fixture: the log is the state, and load_state replaces it
    with the checkpoint's and notes it (an on_train_begin before load_state is forgotten, as
    in Determined, where load_state follows it)."""

    def __init__(self) -> None:
        super().__init__()
        self.lines: list[str] = []

    def on_train_begin(self, logs: Any = None) -> None:
        self.lines.append("on_train_begin")

    def get_state(self) -> Any:
        self.lines.append("get_state")
        return list(self.lines)

    def load_state(self, state: Any) -> None:
        self.lines = [*state, "load_state"]

    def on_train_end(self, logs: Any = None) -> None:
        self.lines.append("on_train_end")
        EVENTS.append(tuple(self.lines))


class StateLogTrial(SmallTrial):
    def keras_callbacks(self) -> list[Any]:
        return [StateLog()]


def test_a_resumed_trial_begins_its_callbacks_before_loading_their_state(tmp_path: Path) -> None:
    EVENTS.clear()
    boundaries = iter(range(100))
    config = CONFIG.replace("checkpoint_policy: none", "min_checkpoint_period: {batches: 6}")
    first = make_run(tmp_path, config, preempt=lambda: next(boundaries) == 2)
    assert train(StateLogTrial, first) is TrialOutcome.PREEMPTED
    second = make_run(
        tmp_path,
        config,
        latest_checkpoint=first.recorder.checkpoints[-1][0],
        recorder=first.recorder,
    )
    assert train(StateLogTrial, second) is TrialOutcome.COMPLETED
    lines = list(EVENTS[-1])
    # Determined's check_pause_continues: one on_train_begin, first; load_state only after
    # on_train_begin or get_state.
    assert lines[0] == "on_train_begin" and lines.count("on_train_begin") == 1, lines
    assert lines[-1] == "on_train_end", lines
    loads = [i for i, line in enumerate(lines) if line == "load_state"]
    assert loads, lines
    assert all(lines[i - 1] in ("on_train_begin", "get_state") for i in loads), lines
