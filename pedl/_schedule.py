"""Where every framework controller ends a chunk of training, and which periodic validation
and checkpoint are then due: ``scheduling_unit``, the searcher operation's target,
``min_validation_period`` and ``min_checkpoint_period``. Framework-free, so that each
controller (Keras, TensorFlowTrial, EstimatorTrial on TensorFlow 2.15) shares it."""

from __future__ import annotations

from collections.abc import Callable
from typing import Protocol

from pedl.config import ExperimentConfig, Length

ToBatches = Callable[[Length], int]
"""The controller's conversion of a length (batches, records or epochs) to batches."""


class ScheduleProgress(Protocol):
    """The part of a controller's progress counters this module reads (-1: never)."""

    batches: int
    last_validation: int
    last_checkpoint: int


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
