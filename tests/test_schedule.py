"""``pedl._schedule``: where every framework controller ends a chunk of training, which
periodic validation and checkpoint are due there (checked against a batch-by-batch
reference), and how the searcher operations training has reached are finished."""

from __future__ import annotations

from dataclasses import dataclass, field

from hypothesis import given
from hypothesis import strategies as st

from pedl._schedule import Operations, checkpoint_due, next_boundary, validation_due
from pedl.config import ExperimentConfig, Length, parse_config


@dataclass
class Progress:
    batches: int = 0
    last_validation: int = -1
    last_checkpoint: int = -1
    last_searcher_metric: float | None = None


@dataclass
class Operation:
    """Stands in for ``pedl.core.SearcherOperation``: a length in batches, and what was
    reported for it."""

    length: int
    unit: str = "batches"
    reported: list[float] = field(default_factory=list)

    def report_completed(self, metric: float) -> None:
        self.reported.append(metric)


def config(unit: int, validation: int, checkpoint: int) -> ExperimentConfig:
    return parse_config(
        {
            "hyperparameters": {"global_batch_size": 8},
            "searcher": {"name": "single", "metric": "loss", "max_length": {"batches": 10}},
            "scheduling_unit": unit,
            "min_validation_period": {"batches": validation},
            "min_checkpoint_period": {"batches": checkpoint},
        }
    )


def in_batches(length: Length) -> int:
    assert length.unit == "batches"
    return length.value


@given(
    unit=st.integers(1, 40),
    validation=st.integers(0, 40),
    checkpoint=st.integers(0, 40),
    target=st.integers(1, 200),
)
def test_chunks_end_where_a_batch_by_batch_loop_would_stop(
    unit: int, validation: int, checkpoint: int, target: int
) -> None:
    cfg = config(unit, validation, checkpoint)
    p = Progress()
    chunk_start = 0
    boundaries, validated, checkpointed = [], [], []
    while p.batches < target:
        end = next_boundary(p, cfg, in_batches, chunk_start=chunk_start, op_target=target)
        assert p.batches < end <= target
        p.batches = chunk_start = end
        boundaries.append(end)
        if validation_due(p, cfg, in_batches):
            p.last_validation = end
            validated.append(end)
        if checkpoint_due(p, cfg, in_batches):
            p.last_checkpoint = end
            checkpointed.append(end)

    # The reference: one batch at a time, stopping wherever any rule says so.
    expected, start = [], 0
    for b in range(1, target + 1):
        if (
            b - start == unit
            or b == target
            or (validation and b % validation == 0)
            or (checkpoint and b % checkpoint == 0)
        ):
            expected.append(b)
            start = b
    assert boundaries == expected
    assert validated == [b for b in expected if validation and b % validation == 0]
    assert checkpointed == [b for b in expected if checkpoint and b % checkpoint == 0]


def test_no_periodic_checkpoint_where_one_was_just_taken() -> None:
    cfg = config(unit=10, validation=5, checkpoint=5)
    p = Progress(batches=10, last_validation=5, last_checkpoint=5)
    assert validation_due(p, cfg, in_batches)
    assert checkpoint_due(p, cfg, in_batches)
    p.last_checkpoint = 10  # e.g. checkpoint_policy after the validation at batch 10
    assert not checkpoint_due(p, cfg, in_batches)


def test_a_boundary_is_always_past_the_current_batch() -> None:
    # A target already reached (a resumed run at its target) still moves on by one batch.
    p = Progress(batches=30)
    assert next_boundary(p, config(100, 0, 0), in_batches, chunk_start=30, op_target=30) == 31


@given(
    lengths=st.lists(st.integers(1, 100), max_size=6).map(sorted),
    steps=st.lists(st.integers(1, 30), min_size=1, max_size=40),
)
def test_operations_are_finished_in_order_once_training_reaches_them(
    lengths: list[int], steps: list[int]
) -> None:
    ops = [Operation(n) for n in lengths]
    p = Progress()
    validations: list[int] = []

    def validate() -> None:
        validations.append(p.batches)
        p.last_validation = p.batches
        p.last_searcher_metric = float(p.batches)  # the metric says where it was taken

    operations = Operations(iter(ops), in_batches)
    for step in steps:
        left = operations.finish_due(p, validate)
        pending = [op for op in ops if not op.reported]
        assert left == bool(pending)
        if not left:
            break
        assert operations.target == pending[0].length > p.batches
        p.batches = min(p.batches + step, operations.target)
    for op in ops:
        # reported at most once, with the validation at the batch where training reached it
        assert op.reported in ([], [float(op.length)])
    # validated only where an operation ended, and never twice at one batch
    assert validations == sorted(set(validations))
    assert set(validations) <= set(lengths)
