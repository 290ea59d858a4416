"""Reporting training and validation metrics."""

from __future__ import annotations

import math
from collections.abc import Mapping
from typing import Protocol

from pedl.vocabulary import MetricKind


class MetricsWriter(Protocol):
    """Where reported metrics go (the local store, or the master's REST API).

    Contract: a write is keyed by ``(kind, total_batches)`` for this trial and is idempotent:
    writing the same key again (as a trial does when it replays batches after a resume)
    replaces the earlier row, it never adds a second one. ``total_epochs`` (the epochs of
    training data those batches are, where the training code knows: a script's ``fit``) is
    kept with the row; None where it is not known.
    """

    def write_metrics(
        self,
        kind: MetricKind,
        total_batches: int,
        metrics: Mapping[str, float],
        total_epochs: float | None = None,
    ) -> None: ...


class TrainContext:
    """Reports a trial's metrics. Only the chief reports; other workers' calls are no-ops."""

    def __init__(self, writer: MetricsWriter, *, is_chief: bool = True) -> None:
        self._writer = writer
        self._is_chief = is_chief

    def report_training_metrics(self, steps_completed: int, metrics: Mapping[str, float]) -> None:
        """Report metrics averaged over the batches since the previous report."""
        self.report(MetricKind.TRAINING, steps_completed, metrics)

    def report_validation_metrics(self, steps_completed: int, metrics: Mapping[str, float]) -> None:
        """Report the metrics of a validation run after ``steps_completed`` batches."""
        self.report(MetricKind.VALIDATION, steps_completed, metrics)

    def report(
        self,
        kind: MetricKind,
        steps_completed: int,
        metrics: Mapping[str, float],
        *,
        total_epochs: float | None = None,
    ) -> None:
        """Report a ``kind`` row after ``steps_completed`` batches; ``total_epochs`` is the
        epochs of training data those batches are, where the training code knows it (a
        script's ``fit`` counts its data's epochs), so the row can be drawn over epochs."""
        if not self._is_chief:
            return
        if steps_completed < 0:
            raise ValueError(f"steps_completed must be >= 0, got {steps_completed}")
        if total_epochs is not None and not (math.isfinite(total_epochs) and total_epochs >= 0):
            raise ValueError(f"total_epochs must be finite and >= 0, got {total_epochs}")
        clean = {str(k): _to_float(k, v) for k, v in metrics.items()}
        self._writer.write_metrics(kind, steps_completed, clean, total_epochs)


def _to_float(name: str, value: object) -> float:
    try:
        number = float(value)  # type: ignore[arg-type]
    except (TypeError, ValueError) as e:
        raise TypeError(f"metric {name!r} is not a number: {value!r}") from e
    return number
