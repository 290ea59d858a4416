"""Where every framework controller ends a chunk of training, and what it does there: the
searcher operations training has reached are finished, and the periodic validation and
checkpoint are taken when due (``scheduling_unit``, the operation's length,
``min_validation_period``, ``min_checkpoint_period``). Framework-free, so that each controller
(Keras, TensorFlowTrial, EstimatorTrial on TensorFlow 2.15) shares it."""

from __future__ import annotations

from collections.abc import Callable, Iterator
from typing import TYPE_CHECKING, Protocol

from pedl.config import ExperimentConfig, Length

if TYPE_CHECKING:
    from pedl.core import SearcherOperation

ToBatches = Callable[[Length], int]
"""The controller's conversion of a length (batches, records or epochs) to batches."""


class ScheduleProgress(Protocol):
    """The part of a controller's progress counters this module reads (-1: never)."""

    batches: int
    last_validation: int
    last_checkpoint: int


class OperationProgress(ScheduleProgress, Protocol):
    """The counters :class:`Operations` reads: those of the schedule and the searcher metric
    of the latest validation."""

    last_searcher_metric: float | None


class Operations:
    """The trial's searcher operations, in order (``operations``: the core context's
    ``searcher.operations()``, which asks the master for each next one)."""

    def __init__(self, operations: Iterator[SearcherOperation], to_batches: ToBatches) -> None:
        self._operations = operations
        self._to_batches = to_batches
        self._current = next(operations, None)
        self.target = 0
        """The current operation's length in batches (0 before :meth:`finish_due`)."""

    def finish_due(self, progress: OperationProgress, validate: Callable[[], None]) -> bool:
        """Finish every operation whose length ``progress.batches`` has reached: validate
        (unless the latest validation is at this batch), then report its searcher metric.
        Return whether an operation is left; its length in batches is then :attr:`target`."""
        while self._current is not None:
            op = self._current
            self.target = self._to_batches(Length(unit=op.unit, value=op.length))
            if progress.batches < self.target:
                return True
            if progress.last_validation != progress.batches:
                validate()
            assert progress.last_searcher_metric is not None
            op.report_completed(progress.last_searcher_metric)
            self._current = next(self._operations, None)
        return False


def next_boundary(
    progress: ScheduleProgress,
    config: ExperimentConfig,
    to_batches: ToBatches,
    *,
    chunk_start: int,
    op_target: int,
) -> int:
    """The batch count at which the current chunk ends: the first of ``scheduling_unit``
    batches after ``chunk_start``, the operation's target ``op_target``, and the next
    ``min_validation_period`` and ``min_checkpoint_period`` (a period of 0 never comes); and
    always at least one batch past ``progress.batches``."""
    candidates = [chunk_start + config.scheduling_unit, op_target]
    validation_period = to_batches(config.min_validation_period)
    if validation_period > 0:
        candidates.append(max(progress.last_validation, 0) + validation_period)
    checkpoint_period = to_batches(config.min_checkpoint_period)
    if checkpoint_period > 0:
        candidates.append(max(progress.last_checkpoint, 0) + checkpoint_period)
    return max(progress.batches + 1, min(candidates))


def validation_due(
    progress: ScheduleProgress, config: ExperimentConfig, to_batches: ToBatches
) -> bool:
    """Whether ``min_validation_period`` asks for a validation at ``progress.batches``."""
    period = to_batches(config.min_validation_period)
    return period > 0 and progress.batches - max(progress.last_validation, 0) >= period


def checkpoint_due(
    progress: ScheduleProgress, config: ExperimentConfig, to_batches: ToBatches
) -> bool:
    """Whether ``min_checkpoint_period`` asks for a checkpoint at ``progress.batches`` (none
    when one was just taken there, e.g. by ``checkpoint_policy`` after a validation: ask
    after validating)."""
    period = to_batches(config.min_checkpoint_period)
    return (
        period > 0
        and progress.batches - max(progress.last_checkpoint, 0) >= period
        and progress.last_checkpoint != progress.batches
    )
