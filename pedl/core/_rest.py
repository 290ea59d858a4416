"""The cluster implementations of the core context parts: REST calls to the master.

Each is the REST counterpart of a local stand-in: :class:`RestMetricsWriter` (train),
:class:`RestCheckpointRegistry` (checkpoint), :class:`RestSearcherSession` (searcher) and
:class:`RestPreemption` (preempt). They share one :class:`MasterClient`.
"""

from __future__ import annotations

import math
import time
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

    ``next_length`` long-polls ``GET /trials/{id}/searcher/operation`` until the master
    answers with a length or says the trial is closed (``wait`` answers are repeated after
    ``poll_interval`` seconds).
    """

    def __init__(self, client: MasterClient, *, poll_interval: float = 0.2) -> None:
        self._client = client
        self._poll_interval = poll_interval

    def next_length(self) -> int | None:
        while True:
            answer = self._client.get(f"{self._client.trial_path}/searcher/operation")
            status = answer.get("status")
            if status == "train":
                return int(answer["length"])
            if status == "closed":
                return None
            time.sleep(self._poll_interval)

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
