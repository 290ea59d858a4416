"""The chunk loop every framework controller runs (Keras, TensorFlowTrial, EstimatorTrial on
TensorFlow 2.15): what happens at the boundaries between chunks of training, and the order
in which a trial ends. Framework-free; each controller trains its batches its own way (Keras's
``fit`` steered by a callback, a ``tf.compat.v1`` session's loop, an estimator's hook) and
calls the loop at the points every framework has:

1. :meth:`ChunkLoop.start` once the checkpoint is restored: the searcher's operations.
2. :meth:`ChunkLoop.begin` before the first batch: the initial validation if the config asks
   (``perform_initial_validation``, at batch 0 of a trial never validated), then the first
   :meth:`~ChunkLoop.advance`.
3. After each batch (the controller adds it to ``progress.batches``), :meth:`ChunkLoop.at_boundary`:
   whether the chunk ends there.
4. At the end of a chunk, once its training metrics are reported, :meth:`ChunkLoop.end_chunk`
   (the periodic validation and checkpoint, when due), then :meth:`ChunkLoop.advance`.
5. In the controller's validation, :meth:`ChunkLoop.record_validation` with its metrics.

:meth:`ChunkLoop.advance` finishes every searcher operation training has reached, then ends
the trial with the first that holds: the searcher has no operation left (COMPLETED), the
trial's code asked to stop (STOPPED_EARLY), the platform asks to preempt (PREEMPTED); else it
sets the next boundary (:func:`pedl._schedule.next_boundary`). Ending, it validates when
stopping early (so the searcher gets a metric at the last batch), checkpoints unless the
latest checkpoint is at this batch (a resumed trial goes on from exactly here), and then
sets the outcome. On several workers every worker runs the same calls in the same order:
the searcher's, the stop request's and the preemption's answers are the chief's.
"""

from __future__ import annotations

import logging
from collections.abc import Callable
from typing import TYPE_CHECKING, Generic, Protocol, TypeVar

from pedl._schedule import (
    OperationProgress,
    Operations,
    ToBatches,
    checkpoint_due,
    next_boundary,
    validation_due,
)
from pedl._searcher_metric import SearcherMetricProgress, record_searcher_metric
from pedl._trial_error import TrialError
from pedl.vocabulary import TrialOutcome

if TYPE_CHECKING:
    from pedl import core


class ChunkProgress(OperationProgress, SearcherMetricProgress, Protocol):
    """The counters the loop keeps (-1: never), which a controller's checkpoint carries."""


P = TypeVar("P", bound=ChunkProgress)


class ChunkLoop(Generic[P]):
    """One trial's chunk loop (see the module docstring).

    ``validate`` runs a validation of the model at ``progress.batches`` and hands its metrics
    to :meth:`record_validation`; ``checkpoint`` writes a checkpoint of the state at
    ``progress.batches`` (the loop has set ``progress.last_checkpoint`` to it);
    ``stop_requested`` says whether the trial's code asked to stop (None: it cannot);
    ``on_stop`` is called once the outcome is set. ``metric_choices`` ends the message of a
    searcher metric missing from a validation's metrics ("set searcher.metric ... to one of
    them": the metrics the message lists); ``logger`` is the controller's."""

    def __init__(
        self,
        context: core.Context,
        progress: P,
        to_batches: ToBatches,
        *,
        validate: Callable[[], None],
        checkpoint: Callable[[], None],
        stop_requested: Callable[[], bool] | None = None,
        on_stop: Callable[[], None] | None = None,
        metric_choices: str = "them",
        logger: logging.Logger,
    ) -> None:
        self._core = context
        self._config = context.info.config
        self.progress = progress
        """The counters: replaced by a controller's restore with those of the checkpoint."""
        self._to_batches = to_batches
        self._validate = validate
        self._checkpoint = checkpoint
        self._stop_requested = stop_requested
        self._on_stop = on_stop
        self._metric_choices = metric_choices
        self._logger = logger
        self._operations = Operations(iter(()), to_batches)
        self.next_boundary = 0
        """The batch count at which the current chunk ends."""
        self.outcome: TrialOutcome | None = None
        """How the trial ends, once :meth:`advance` returned False."""
        self._checkpoint_due = False
        """The periodic checkpoint is due at this boundary (see :meth:`end_chunk`)."""
        self.last_validation_metrics: dict[str, float] = {}
        """The latest validation's metrics (a checkpoint's metadata carries them)."""

    def start(self) -> None:
        """Take the searcher's operations (the first is asked for now)."""
        self._operations = Operations(self._core.searcher.operations(), self._to_batches)

    def begin(self) -> bool:
        """Before the first batch of this run: validate first if the config asks, then
        :meth:`advance`."""
        p = self.progress
        if self._config.perform_initial_validation and p.batches == 0 and p.last_validation < 0:
            self._validate()
        return self.advance()

    def at_boundary(self) -> bool:
        """Whether the current chunk ends at ``progress.batches``."""
        return self.progress.batches >= self.next_boundary

    def end_chunk(self) -> None:
        """At the end of a chunk: validate when its period is due; a checkpoint whose period
        is due is taken by :meth:`advance`, after the validations the searcher's operations
        ask for at this boundary, so that it holds their state (a trial resumed from it
        validates where an uninterrupted one does)."""
        p = self.progress
        if validation_due(p, self._config, self._to_batches):
            self._validate()
        self._checkpoint_due = checkpoint_due(p, self._config, self._to_batches)

    def advance(self) -> bool:
        """At a boundary: finish due operations and decide whether to train on.

        Returns True to train on towards :attr:`next_boundary`; False after ending the trial
        (see the module docstring), with :attr:`outcome` set.
        """
        operations_left = self._operations.finish_due(self.progress, self._validate)
        if self._checkpoint_due:
            self._checkpoint_due = False
            if self.progress.last_checkpoint != self.progress.batches:
                self.checkpoint()
        if not operations_left:
            return self._stop(TrialOutcome.COMPLETED)
        if self._stop_requested is not None and self._stop_requested():
            return self._stop(TrialOutcome.STOPPED_EARLY)
        if self._core.preempt.should_preempt():
            return self._stop(TrialOutcome.PREEMPTED)
        # Every chunk starts at the boundary where the one before ended.
        p = self.progress
        self.next_boundary = next_boundary(
            p,
            self._config,
            self._to_batches,
            chunk_start=p.batches,
            op_target=self._operations.target,
        )
        return True

    def record_validation(
        self, metrics: dict[str, float], *, after_report: Callable[[], None] | None = None
    ) -> None:
        """A validation at ``progress.batches`` gave ``metrics``: log and report them (then
        call ``after_report``), keep its searcher metric and the best, and checkpoint when
        ``checkpoint_policy`` asks. A searcher metric missing from ``metrics`` raises
        :class:`TrialError`."""
        p = self.progress
        shown = ", ".join(f"{k} {v:.4g}" for k, v in metrics.items())
        self._logger.info("validation at batch %d: %s", p.batches, shown or "no metrics")
        self._core.train.report_validation_metrics(p.batches, metrics)
        if after_report is not None:
            after_report()
        self.last_validation_metrics = metrics
        p.last_validation = p.batches
        if record_searcher_metric(
            p, self._config, metrics, choices=self._metric_choices, error=TrialError
        ):
            self.checkpoint()

    def checkpoint(self) -> None:
        """Checkpoint the state at ``progress.batches``."""
        p = self.progress
        p.last_checkpoint = p.batches
        self._checkpoint()

    def result(self) -> TrialOutcome:
        """The outcome, once the loop has ended the trial."""
        assert self.outcome is not None, "the chunk loop has not ended the trial"
        return self.outcome

    def _stop(self, outcome: TrialOutcome) -> bool:
        p = self.progress
        if outcome is TrialOutcome.STOPPED_EARLY and p.last_validation != p.batches:
            self._validate()
        if p.last_checkpoint != p.batches:
            self.checkpoint()
        self.outcome = outcome
        if self._on_stop is not None:
            self._on_stop()
        return False
