"""The core context parts and their local stand-ins."""

from __future__ import annotations

import json
import math
import os
import signal
from collections.abc import Mapping
from pathlib import Path
from typing import Any

import pytest

from pedl import core
from pedl.storage import SharedFSStorage


def test_distributed_context_checks_its_ranks() -> None:
    with pytest.raises(ValueError, match="rank must be in"):
        core.DistributedContext(rank=2, size=2)
    with pytest.raises(ValueError, match="local_rank"):
        core.DistributedContext(local_rank=1, local_size=1)
    with pytest.raises(ValueError, match="cross_rank"):
        core.DistributedContext(cross_rank=3, cross_size=2, chief_ip="10.0.0.1")
    with pytest.raises(ValueError, match="chief_ip is required"):
        core.DistributedContext(rank=0, size=4, cross_size=2)
    d = core.DistributedContext(
        rank=1, size=4, local_rank=1, local_size=2, cross_rank=0, cross_size=2, chief_ip="127.0.0.1"
    )
    assert (d.get_rank(), d.get_size(), d.get_num_agents(), d.is_chief) == (1, 4, 2, False)


class Writer:
    def __init__(self) -> None:
        self.rows: list[tuple[str, int, dict[str, float]]] = []
        self.epochs: list[float | None] = []

    def write_metrics(
        self,
        kind: core.MetricKind,
        total_batches: int,
        metrics: Mapping[str, float],
        total_epochs: float | None = None,
    ) -> None:
        self.rows.append((kind, total_batches, dict(metrics)))
        self.epochs.append(total_epochs)


def test_train_context_reports_numbers_from_the_chief_only() -> None:
    writer = Writer()
    core.TrainContext(writer).report_training_metrics(5, {"loss": 1, "acc": 0.5})
    core.TrainContext(writer, is_chief=False).report_validation_metrics(5, {"loss": 2.0})
    assert writer.rows == [("training", 5, {"loss": 1.0, "acc": 0.5})]
    with pytest.raises(TypeError, match="metric 'loss' is not a number"):
        core.TrainContext(writer).report_validation_metrics(6, {"loss": "high"})
    with pytest.raises(ValueError, match="steps_completed must be >= 0"):
        core.TrainContext(writer).report_training_metrics(-1, {})


def test_train_context_carries_the_epochs_of_a_row() -> None:
    writer = Writer()
    train = core.TrainContext(writer)
    train.report(core.MetricKind.VALIDATION, 8, {"loss": 1.0}, total_epochs=2.0)
    train.report_training_metrics(9, {"loss": 1.0})
    assert writer.epochs == [2.0, None]
    for bad in (-1.0, math.inf, math.nan):
        with pytest.raises(ValueError, match="total_epochs must be finite and >= 0"):
            train.report(core.MetricKind.TRAINING, 10, {"loss": 1.0}, total_epochs=bad)
    assert len(writer.rows) == 2


class Session:
    def __init__(self, lengths: list[int]) -> None:
        self.lengths = lengths
        self.done: list[tuple[int, float]] = []

    def next_length(self) -> int | None:
        return self.lengths[0] if self.lengths else None

    def complete(self, length: int, searcher_metric: float) -> None:
        self.lengths.pop(0)
        self.done.append((length, searcher_metric))


def test_searcher_operations_must_be_completed_in_turn() -> None:
    session = Session([10, 20])
    searcher = core.SearcherContext(session, "batches")
    lengths = []
    for op in searcher.operations():
        lengths.append((op.length, op.unit))
        op.report_completed(op.length / 100)
        with pytest.raises(RuntimeError, match="already completed"):
            op.report_completed(0.0)
    assert lengths == [(10, "batches"), (20, "batches")]
    assert session.done == [(10, 0.1), (20, 0.2)]

    ops = core.SearcherContext(Session([5]), "epochs").operations()
    next(ops)
    with pytest.raises(RuntimeError, match="must be completed"):
        next(ops)


class Registry:
    def __init__(self) -> None:
        self.registered: list[tuple[str, int, dict[str, Any], dict[str, int]]] = []

    def register_checkpoint(
        self,
        storage_id: str,
        total_batches: int,
        metadata: Mapping[str, Any],
        resources: Mapping[str, int],
    ) -> None:
        self.registered.append((storage_id, total_batches, dict(metadata), dict(resources)))


def test_checkpoint_context_writes_metadata_and_registers_on_success(tmp_path: Path) -> None:
    registry = Registry()
    checkpoints = core.CheckpointContext(SharedFSStorage(tmp_path), registry)
    with checkpoints.store_path({"steps_completed": 7, "note": "x"}) as (path, storage_id):
        (path / "weights").write_bytes(b"1234")
    ((registered_id, batches, metadata, resources),) = registry.registered
    assert (registered_id, batches) == (storage_id, 7)
    assert resources == {
        "metadata.json": (tmp_path / storage_id / "metadata.json").stat().st_size,
        "weights": 4,
    }
    assert checkpoints.get_metadata(storage_id) == metadata == {"steps_completed": 7, "note": "x"}
    with checkpoints.restore_path(storage_id) as path:
        assert json.loads((path / "metadata.json").read_text())["note"] == "x"

    with pytest.raises(ZeroDivisionError), checkpoints.store_path({"steps_completed": 8}):
        raise ZeroDivisionError("crash while writing")
    assert len(registry.registered) == 1
    with pytest.raises(ValueError, match="steps_completed"), checkpoints.store_path({}):
        pass


def test_signal_preemption_asks_to_stop_and_a_second_sigint_interrupts() -> None:
    # What SIGINT did before (Python's default handler; SIG_IGN where the test process was
    # started in the background by a shell without job control) comes back afterwards.
    before = (signal.getsignal(signal.SIGINT), signal.getsignal(signal.SIGTERM))
    with core.SignalPreemption() as preemption:
        preempt = core.PreemptContext(preemption.requested)
        assert not preempt.should_preempt()
        os.kill(os.getpid(), signal.SIGTERM)
        assert preempt.should_preempt()
        with pytest.raises(KeyboardInterrupt):
            os.kill(os.getpid(), signal.SIGINT)
    assert (signal.getsignal(signal.SIGINT), signal.getsignal(signal.SIGTERM)) == before


def test_the_memory_backend_keeps_what_a_trial_reports() -> None:
    recorder = core.MemoryBackend()
    recorder.write_metrics("training", 10, {"loss": 1.0})
    recorder.write_metrics("training", 10, {"loss": 0.5})
    recorder.write_metrics("validation", 10, {"val_loss": 0.7})
    assert recorder.metrics[("training", 10)] == {"loss": 0.5}  # upsert, like the stores
    assert recorder.writes == [("training", 10), ("training", 10), ("validation", 10)]
    assert recorder.batches("training") == [10]
    recorder.register_checkpoint("abc", 10, {}, {})
    assert recorder.checkpoints == [("abc", 10)]

    searcher = core.MemoryBackend([5, 9])
    assert searcher.next_length() == 5
    with pytest.raises(ValueError, match="completed length 9, but the next one is"):
        searcher.complete(9, 0.1)
    searcher.complete(5, 0.2)
    assert (searcher.next_length(), searcher.completed) == (9, [(5, 0.2)])
    searcher.complete(9, 0.3)
    assert (searcher.next_length(), searcher.completed) == (None, [(5, 0.2), (9, 0.3)])
