"""The in-memory trial backend: keeps what a trial reports, for smoke checks and tests."""

from __future__ import annotations

from collections.abc import Callable, Iterable, Mapping
from typing import Any

from pedl.vocabulary import MetricKind


class MemoryBackend:
    """A :class:`pedl.core.TrialBackend` in memory: a searcher that hands out ``lengths`` in
    turn, then closes the trial; preemption while :attr:`preempt` is true (or, a callable,
    returns true: a test's answer per ask).

    ``metrics`` maps ``(kind, total_batches)`` to the latest report (an upsert, like the real
    stores), ``epochs`` to its ``total_epochs``; ``writes`` lists every report in order, so
    a double write can be seen; ``checkpoints`` lists ``(storage_id, total_batches)`` in
    registration order; ``completed`` lists ``(length, searcher_metric)`` as reported (a
    trial that stops early says so in its outcome, not here); ``lengths`` are the lengths
    still to hand out.
    """

    def __init__(
        self, lengths: Iterable[int] = (), *, preempt: bool | Callable[[], bool] = False
    ) -> None:
        self.lengths = list(lengths)
        self.preempt = preempt
        self.metrics: dict[tuple[str, int], dict[str, float]] = {}
        self.epochs: dict[tuple[str, int], float | None] = {}
        self.writes: list[tuple[str, int]] = []
        self.checkpoints: list[tuple[str, int]] = []
        self.completed: list[tuple[int, float]] = []

    def write_metrics(
        self,
        kind: MetricKind,
        total_batches: int,
        metrics: Mapping[str, float],
        total_epochs: float | None = None,
    ) -> None:
        self.metrics[(kind, total_batches)] = dict(metrics)
        self.epochs[(kind, total_batches)] = total_epochs
        self.writes.append((kind, total_batches))

    def register_checkpoint(
        self,
        storage_id: str,
        total_batches: int,
        metadata: Mapping[str, Any],
        resources: Mapping[str, int],
    ) -> None:
        self.checkpoints.append((storage_id, total_batches))

    def next_length(self) -> int | None:
        return self.lengths[0] if self.lengths else None

    def complete(self, length: int, searcher_metric: float) -> None:
        if not self.lengths or self.lengths[0] != length:
            raise ValueError(f"completed length {length}, but the next one is {self.lengths[:1]}")
        self.lengths.pop(0)
        self.completed.append((length, searcher_metric))

    def should_preempt(self) -> bool:
        return bool(self.preempt()) if callable(self.preempt) else self.preempt

    def batches(self, kind: MetricKind) -> list[int]:
        """The batch counts at which ``kind`` metrics were reported, ascending."""
        return sorted(b for k, b in self.metrics if k == kind)
