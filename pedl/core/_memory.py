"""In-process stand-ins that keep what a trial reports: for smoke checks and tests."""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from typing import Any

from pedl.engine import MetricKind


class MemoryRecorder:
    """The train and checkpoint backends in memory.

    ``metrics`` maps ``(kind, total_batches)`` to the latest report (an upsert, like the real
    stores); ``writes`` lists every report in order, so a double write can be seen;
    ``checkpoints`` lists ``(storage_id, total_batches)`` in registration order.
    """

    def __init__(self) -> None:
        self.metrics: dict[tuple[str, int], dict[str, float]] = {}
        self.writes: list[tuple[str, int]] = []
        self.checkpoints: list[tuple[str, int]] = []

    def write_metrics(
        self, kind: MetricKind, total_batches: int, metrics: Mapping[str, float]
    ) -> None:
        self.metrics[(kind, total_batches)] = dict(metrics)
        self.writes.append((kind, total_batches))

    def register_checkpoint(
        self,
        storage_id: str,
        total_batches: int,
        metadata: Mapping[str, Any],
        resources: Mapping[str, int],
    ) -> None:
        self.checkpoints.append((storage_id, total_batches))

    def batches(self, kind: MetricKind) -> list[int]:
        """The batch counts at which ``kind`` metrics were reported, ascending."""
        return sorted(b for k, b in self.metrics if k == kind)


class FixedLengths:
    """A searcher that hands out the given lengths in turn, then closes the trial.

    ``completed`` lists ``(length, searcher_metric)`` as reported. A trial that stops early
    says so in its outcome (``STOPPED_EARLY``), not here.
    """

    def __init__(self, lengths: Iterable[int]) -> None:
        self.lengths = list(lengths)
        self.completed: list[tuple[int, float]] = []

    def next_length(self) -> int | None:
        return self.lengths[0] if self.lengths else None

    def complete(self, length: int, searcher_metric: float) -> None:
        if not self.lengths or self.lengths[0] != length:
            raise ValueError(f"completed length {length}, but the next one is {self.lengths[:1]}")
        self.lengths.pop(0)
        self.completed.append((length, searcher_metric))
