"""The cluster implementations of the core context parts: REST calls to the master.

Each is the REST counterpart of a local stand-in: :class:`RestMetricsWriter` (train),
:class:`RestCheckpointRegistry` (checkpoint), :class:`RestSearcherSession` (searcher) and
:class:`RestPreemption` (preempt). They share one :class:`MasterClient`.
"""

from __future__ import annotations

import math
from collections.abc import Mapping
from typing import Any

from pedl.core._master_client import MasterClient
from pedl.engine import MetricKind


def _json_safe(value: Any) -> Any:
    """Non-finite floats as the strings the master's API uses; containers recursively."""
    if isinstance(value, float) and not math.isfinite(value):
        return "NaN" if math.isnan(value) else ("Infinity" if value > 0 else "-Infinity")
    if isinstance(value, Mapping):
        return {str(k): _json_safe(v) for k, v in value.items()}
    if isinstance(value, list | tuple):
        return [_json_safe(v) for v in value]
    return value


class RestMetricsWriter:
    """Posts each report (one per chunk or validation) as one row; the master upserts it on
    ``(kind, total_batches)``, so re-sending after a resume neither loses nor doubles rows."""

    def __init__(self, client: MasterClient) -> None:
        self._client = client

    def write_metrics(
        self, kind: MetricKind, total_batches: int, metrics: Mapping[str, float]
    ) -> None:
        row = {"kind": kind, "total_batches": total_batches, "metrics": _json_safe(metrics)}
        self._client.post(f"{self._client.trial_path}/metrics", {"rows": [row]})


class RestCheckpointRegistry:
    """Registers a stored checkpoint with the master (COMPLETED)."""

    def __init__(self, client: MasterClient) -> None:
        self._client = client

    def register_checkpoint(
        self,
        storage_id: str,
        total_batches: int,
        metadata: Mapping[str, Any],
        resources: Mapping[str, int],
    ) -> None:
        self._client.post(
            f"{self._client.trial_path}/checkpoints",
            {
                "uuid": storage_id,
                "total_batches": total_batches,
                "metadata": _json_safe(metadata),
                "resources": dict(resources),
            },
        )


class RestSearcherSession:
    """The trial's searcher operations from the master.

    ``next_length`` asks ``GET /trials/{id}/searcher/operation``, which long-polls on the
    master: it answers with a length, says the trial is closed, or says ``wait`` (the
    searcher has no work for the trial yet, e.g. an ASHA trial waiting for its rung to fill).
    On ``wait`` the process stops for now (it checkpoints and exits, freeing its slot); the
    master starts the trial again from that checkpoint when the searcher gives it more work.
    """

    def __init__(self, client: MasterClient) -> None:
        self._client = client

    def next_length(self) -> int | None:
        answer = self._client.get(f"{self._client.trial_path}/searcher/operation")
        if answer.get("status") == "train":
            return int(answer["length"])
        return None

    def complete(self, length: int, searcher_metric: float) -> None:
        self._client.post(
            f"{self._client.trial_path}/searcher/completed",
            {"length": length, "metric": _json_safe(float(searcher_metric))},
        )


class RestPreemption:
    """``should_preempt`` asks ``GET /trials/{id}/preempt`` (pause, cancel, kill, drain)."""

    def __init__(self, client: MasterClient) -> None:
        self._client = client

    def should_preempt(self) -> bool:
        answer = self._client.get(f"{self._client.trial_path}/preempt")
        return bool(answer.get("preempt"))
