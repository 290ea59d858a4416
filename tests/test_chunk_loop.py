"""``pedl._chunk_loop``: the chunk loop every framework controller runs, driven by a tiny trial
of its own over a real core context (the in-memory trial backend, checkpoints in a real shared
file system storage): where chunks end, what is validated and checkpointed there, how a trial
ends (the stop order), and that a preempted trial resumed from its checkpoint validates and
ends as an uninterrupted one does."""

from __future__ import annotations

import json
import logging
import tempfile
from collections.abc import Callable
from dataclasses import asdict, dataclass
from pathlib import Path

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from pedl import core
from pedl._chunk_loop import ChunkLoop
from pedl._trial_error import TrialError
from pedl.config import ExperimentConfig, Length, parse_config
from pedl.storage import SharedFSStorage
from pedl.vocabulary import TrialOutcome

logger = logging.getLogger("tests.chunk_loop")


@dataclass
class Progress:
    batches: int = 0
    last_validation: int = -1
    last_checkpoint: int = -1
    best_metric: float | None = None
    last_searcher_metric: float | None = None


def in_batches(length: Length) -> int:
    assert length.unit == "batches"
    return length.value


def loss_of(weight: int) -> float:
    """The tiny model's validation loss: up and down with training, so that ``best`` varies."""
    return (weight * 7919 % 101) / 100


class Counter:
    """A tiny trial on the chunk loop, driven as a framework controller drives it: its model is
    ``weight``, to which each batch adds its number; a validation reports ``loss_of(weight)``;
    a checkpoint holds the weight and the loop's counters. It asks to stop once ``stop_at``
    batches are trained (asked after every batch, as a Keras callback can)."""

    def __init__(self, context: core.Context, *, stop_at: int | None) -> None:
        self._core = context
        self.stop_at = stop_at
        self.weight = 0
        self.events: list[tuple[str, int]] = []
        self.loop = ChunkLoop(
            context,
            Progress(),
            in_batches,
            validate=self.validate,
            checkpoint=self.checkpoint,
            stop_requested=self.stop_requested,
            logger=logger,
        )

    def run(self) -> TrialOutcome:
        if self._core.info.latest_checkpoint:
            self.restore(self._core.info.latest_checkpoint)
        self.loop.start()
        keep_going = self.loop.begin()
        while keep_going:
            p = self.loop.progress
            while True:
                p.batches += 1
                self.weight += p.batches
                if self.loop.at_boundary() or self.stop_requested():
                    break
            self._core.train.report_training_metrics(p.batches, {"weight": float(self.weight)})
            self.events.append(("chunk", p.batches))
            self.loop.end_chunk()
            keep_going = self.loop.advance()
        return self.loop.result()

    def stop_requested(self) -> bool:
        return self.stop_at is not None and self.loop.progress.batches >= self.stop_at

    def validate(self) -> None:
        self.events.append(("validate", self.loop.progress.batches))
        self.loop.record_validation({"loss": loss_of(self.weight)})

    def checkpoint(self) -> None:
        p = self.loop.progress
        assert p.last_checkpoint == p.batches  # the loop's bookkeeping, before the controller's
        self.events.append(("checkpoint", p.batches))
        with self._core.checkpoint.store_path({"steps_completed": p.batches}) as (path, _):
            state = {
                "progress": asdict(p),
                "weight": self.weight,
                "validation": self.loop.last_validation_metrics,
            }
            (path / "state.json").write_text(json.dumps(state))

    def restore(self, storage_id: str) -> None:
        with self._core.checkpoint.restore_path(storage_id) as path:
            state = json.loads((path / "state.json").read_text())
        self.loop.progress = Progress(**state["progress"])
        self.weight = state["weight"]
        self.loop.last_validation_metrics = state["validation"]


def experiment(
    unit: int, validation: int, checkpoint: int, policy: str, initial: bool
) -> ExperimentConfig:
    return parse_config(
        {
            "hyperparameters": {"global_batch_size": 8},
            "searcher": {"name": "single", "metric": "loss", "max_length": {"batches": 10}},
            "scheduling_unit": unit,
            "min_validation_period": {"batches": validation},
            "min_checkpoint_period": {"batches": checkpoint},
            "checkpoint_policy": policy,
            "perform_initial_validation": initial,
        }
    )


def run_trial(
    config: ExperimentConfig,
    backend: core.MemoryBackend,
    home: Path,
    *,
    stop_at: int | None = None,
    latest: str | None = None,
) -> tuple[Counter, TrialOutcome]:
    info = core.TrialInfo(
        trial_id=1,
        experiment_id=1,
        hparams={},
        trial_seed=1,
        config=config,
        code_dir=home,
        latest_checkpoint=latest,
    )
    context = core.build_context(
        info, backend=backend, storage=SharedFSStorage(home / "checkpoints")
    )
    trial = Counter(context, stop_at=stop_at)
    return trial, trial.run()


def preempt_at(ask: int | None) -> Callable[[], bool]:
    """A preemption answer that is True at the ``ask``-th question (never when None)."""
    asked = 0

    def answer() -> bool:
        nonlocal asked
        asked += 1
        return asked == ask

    return answer


operation_lengths = st.lists(st.integers(1, 60), min_size=1, max_size=4).map(sorted)
schedules = st.fixed_dictionaries(
    {
        "unit": st.integers(1, 12),
        "validation": st.integers(0, 15),
        "checkpoint": st.integers(0, 15),
        "policy": st.sampled_from(["none", "best", "all"]),
        "initial": st.booleans(),
    }
)


@settings(max_examples=60)
@given(
    lengths=operation_lengths,
    schedule=schedules,
    stop_at=st.none() | st.integers(1, 70),
    preempt=st.none() | st.integers(1, 20),
)
def test_chunks_validations_checkpoints_and_the_stop_order(
    lengths: list[int], schedule: dict, stop_at: int | None, preempt: int | None
) -> None:
    unit, vp, cp = schedule["unit"], schedule["validation"], schedule["checkpoint"]
    config = experiment(**schedule)
    backend = core.MemoryBackend(lengths, preempt=preempt_at(preempt))
    with tempfile.TemporaryDirectory() as home:
        trial, outcome = run_trial(config, backend, Path(home), stop_at=stop_at)
    events = trial.events
    final = trial.loop.progress.batches
    validations = [b for kind, b in events if kind == "validate"]
    checkpoints = [b for kind, b in events if kind == "checkpoint"]

    # How it ended: the searcher's operations first, then the stop request, then preemption.
    reached = [n for n in lengths if n <= final]
    assert backend.completed == [(n, backend.metrics[("validation", n)]["loss"]) for n in reached]
    if outcome is TrialOutcome.COMPLETED:
        assert reached == lengths and final == lengths[-1]
    elif outcome is TrialOutcome.STOPPED_EARLY:
        assert final == stop_at and reached != lengths
        assert final in validations  # the searcher gets a metric at the last batch
    else:
        assert outcome is TrialOutcome.PREEMPTED and preempt is not None
        assert reached != lengths and (stop_at is None or final < stop_at)
    # A trial ends with a checkpoint of its last batch (validating after it when stopping
    # early right after a periodic checkpoint); never validates twice at a batch.
    assert events[-1] in {("checkpoint", final), ("validate", final)}
    assert backend.checkpoints[-1][1] == final
    assert validations == sorted(set(validations))
    assert checkpoints == sorted(checkpoints)

    # Each chunk ends at the first of: scheduling_unit batches, the operation's length, the
    # next validation or checkpoint period, the stop request.
    last_v = last_c = start = 0  # the latest validation and checkpoint (0: none yet)
    for i, (kind, b) in enumerate(events):
        if kind == "chunk":
            candidates = [start + unit, next(n for n in lengths if n > start)]
            candidates += [last_v + vp] if vp else []
            candidates += [last_c + cp] if cp else []
            candidates += [stop_at] if stop_at is not None else []
            assert b == min(candidates), (start, candidates)
            start = b
        elif kind == "validate":
            # initial, an operation's end, the last batch of a trial stopping early, a period
            assert (
                b == 0
                or b in lengths
                or (outcome is TrialOutcome.STOPPED_EARLY and b == final)
                or b - last_v == vp
            ), (b, last_v)
            last_v = b
        else:
            # a period, after a validation by checkpoint_policy, or the last batch; twice at a
            # batch only for checkpoint_policy, right after a validation there
            by_policy = i > 0 and events[i - 1] == ("validate", b) and schedule["policy"] != "none"
            assert b == final or b - last_c == cp or by_policy
            assert ("checkpoint", b) not in events[:i] or by_policy
            last_c = b
    if schedule["initial"]:
        assert validations[0] == 0
    if schedule["policy"] == "all":
        assert set(validations) <= set(checkpoints)
    assert backend.batches("training") == [b for kind, b in events if kind == "chunk"]


@settings(max_examples=40)
@given(
    lengths=operation_lengths,
    schedule=schedules,
    stop_at=st.none() | st.integers(1, 70),
    preempt=st.integers(1, 12),
)
def test_a_preempted_trial_resumed_validates_and_ends_as_an_uninterrupted_one(
    lengths: list[int], schedule: dict, stop_at: int | None, preempt: int
) -> None:
    config = experiment(**schedule)
    with tempfile.TemporaryDirectory() as home:
        whole = core.MemoryBackend(lengths)
        uninterrupted, expected = run_trial(config, whole, Path(home) / "whole", stop_at=stop_at)

        parts = core.MemoryBackend(lengths, preempt=preempt_at(preempt))
        last, outcome = run_trial(config, parts, Path(home) / "parts", stop_at=stop_at)
        while outcome is TrialOutcome.PREEMPTED:  # at most once: then never preempted again
            parts.preempt = False
            latest = parts.checkpoints[-1][0]
            last, outcome = run_trial(
                config, parts, Path(home) / "parts", stop_at=stop_at, latest=latest
            )
    assert outcome is expected
    assert last.weight == uninterrupted.weight
    assert parts.completed == whole.completed

    def reported(backend: core.MemoryBackend, kind: str) -> dict[int, dict[str, float]]:
        return {b: metrics for (k, b), metrics in backend.metrics.items() if k == kind}

    # The same validations; the chunks may differ: min_checkpoint_period counts from the
    # preemption's checkpoint, as it counts from any checkpoint. The model at each chunk's end
    # is the one an uninterrupted run has at that batch.
    assert reported(parts, "validation") == reported(whole, "validation")
    for b, metrics in reported(parts, "training").items():
        assert metrics == {"weight": b * (b + 1) / 2}


def example_trial(
    tmp_path: Path,
    *,
    validation: int = 0,
    policy: str = "none",
    stop_at: int | None = None,
    preempt: int | None = None,
) -> tuple[Counter, TrialOutcome]:
    """One operation of 10 batches, in chunks of 4."""
    config = experiment(unit=4, validation=validation, checkpoint=0, policy=policy, initial=False)
    backend = core.MemoryBackend([10], preempt=preempt_at(preempt))
    return run_trial(config, backend, tmp_path, stop_at=stop_at)


def test_stopping_early_validates_then_checkpoints_the_last_batch(tmp_path: Path) -> None:
    trial, outcome = example_trial(tmp_path, stop_at=6)
    assert outcome is TrialOutcome.STOPPED_EARLY
    assert trial.events == [("chunk", 4), ("chunk", 6), ("validate", 6), ("checkpoint", 6)]


def test_a_preempted_trial_checkpoints_without_validating(tmp_path: Path) -> None:
    trial, outcome = example_trial(tmp_path, preempt=2)  # asked at batches 0 and 4
    assert outcome is TrialOutcome.PREEMPTED
    assert trial.events == [("chunk", 4), ("checkpoint", 4)]


def test_a_stop_request_comes_before_a_preemption_at_the_same_boundary(tmp_path: Path) -> None:
    trial, outcome = example_trial(tmp_path, stop_at=4, preempt=2)
    assert outcome is TrialOutcome.STOPPED_EARLY
    assert trial.events == [("chunk", 4), ("validate", 4), ("checkpoint", 4)]


def test_reaching_the_searchers_length_comes_before_a_stop_request(tmp_path: Path) -> None:
    trial, outcome = example_trial(tmp_path, stop_at=10)
    assert outcome is TrialOutcome.COMPLETED
    assert trial.events == [
        ("chunk", 4),
        ("chunk", 8),
        ("chunk", 10),
        ("validate", 10),
        ("checkpoint", 10),
    ]


def test_a_completed_trial_validates_and_checkpoints_once_at_its_length(tmp_path: Path) -> None:
    trial, outcome = example_trial(tmp_path, validation=5, policy="all")
    assert outcome is TrialOutcome.COMPLETED
    assert trial.events == [
        ("chunk", 4),
        ("chunk", 5),
        ("validate", 5),
        ("checkpoint", 5),
        ("chunk", 9),
        ("chunk", 10),
        ("validate", 10),
        ("checkpoint", 10),
    ]


def test_a_missing_searcher_metric_is_a_trial_error_naming_the_metrics_there_are(
    tmp_path: Path,
) -> None:
    trial, _ = example_trial(tmp_path)
    with pytest.raises(TrialError, match=r"'loss' is not among the validation metrics \(acc\)"):
        trial.loop.record_validation({"acc": 1.0})
