"""The cluster implementations of the core context parts: REST calls to the master.

Each is the REST counterpart of a local stand-in: :class:`RestMetricsWriter` (train),
:class:`RestCheckpointRegistry` (checkpoint), :class:`RestSearcherSession` (searcher) and
:class:`RestPreemption` (preempt). They share one :class:`MasterClient` and one
:class:`ReportSender`.

Training does not wait for an unreachable master: metric reports, checkpoint registrations
and searcher completions go through the sender's queue, in order, and the preemption poll
answers from its last answer while the master cannot be reached. The request for the next
searcher operation waits (the trial cannot know how far to train without it); it first waits
for every queued report to be sent, so the master acts on it knowing all that came before. A
checkpoint registration waits for the master too while it answers (up to
:data:`CHECKPOINT_SETTLE_S`): a trial killed just after a checkpoint restarts from it.
"""

from __future__ import annotations

import math
from collections.abc import Mapping
from typing import Any

from pedl.core._master_client import MasterClient, MasterError
from pedl.core._report_sender import ReportSender
from pedl.engine import MetricKind

CHECKPOINT_SETTLE_S = 10.0
"""How long a checkpoint registration waits for the master to have it (and every report
before it) while the master answers; an unreachable master is not waited for."""
PREEMPT_POLL_TIMEOUT_S = 5.0
"""How long one preemption poll waits for the master's answer before it is given up."""


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
    """Queues each report (one per chunk or validation) as one row; the master upserts it on
    ``(kind, total_batches)``, so re-sending after a resume neither loses nor doubles rows."""

    def __init__(self, sender: ReportSender, trial_path: str) -> None:
        self._sender = sender
        self._trial_path = trial_path

    def write_metrics(
        self, kind: MetricKind, total_batches: int, metrics: Mapping[str, float]
    ) -> None:
        row = {"kind": kind, "total_batches": total_batches, "metrics": _json_safe(metrics)}
        self._sender.send(f"{self._trial_path}/metrics", {"rows": [row]})


class RestCheckpointRegistry:
    """Queues the registration of a stored checkpoint (COMPLETED), after the reports made
    before it: the master records the checkpoint only once its files are stored. Then it waits
    until the master has it, unless the master cannot be reached (see
    :meth:`ReportSender.settle`): otherwise a process killed a moment after its checkpoint
    would restart from the one before."""

    def __init__(self, sender: ReportSender, trial_path: str) -> None:
        self._sender = sender
        self._trial_path = trial_path

    def register_checkpoint(
        self,
        storage_id: str,
        total_batches: int,
        metadata: Mapping[str, Any],
        resources: Mapping[str, int],
    ) -> None:
        self._sender.send(
            f"{self._trial_path}/checkpoints",
            {
                "uuid": storage_id,
                "total_batches": total_batches,
                "metadata": _json_safe(metadata),
                "resources": dict(resources),
            },
        )
        self._sender.settle(CHECKPOINT_SETTLE_S)


class RestSearcherSession:
    """The trial's searcher operations from the master.

    ``next_length`` asks ``GET /trials/{id}/searcher/operation``, which long-polls on the
    master: it answers with a length, says the trial is closed, or says ``wait`` (the
    searcher has no work for the trial yet, e.g. an ASHA trial waiting for its rung to fill).
    On ``wait`` the process stops for now (it checkpoints and exits, freeing its slot); the
    master starts the trial again from that checkpoint when the searcher gives it more work.
    ``next_length`` first flushes ``sender``; ``complete`` is queued behind the reports made
    before it.
    """

    def __init__(self, client: MasterClient, sender: ReportSender) -> None:
        self._client = client
        self._sender = sender

    def next_length(self) -> int | None:
        self._sender.flush()
        answer = self._client.get(f"{self._client.trial_path}/searcher/operation")
        if answer.get("status") == "train":
            return int(answer["length"])
        return None

    def complete(self, length: int, searcher_metric: float) -> None:
        self._sender.send(
            f"{self._client.trial_path}/searcher/completed",
            {"length": length, "metric": _json_safe(float(searcher_metric))},
        )


class RestPreemption:
    """``should_preempt`` asks ``GET /trials/{id}/preempt`` (pause, cancel, kill, drain).

    While the report sender is retrying (reports wait, and the client's latest try failed) it
    answers from the last answer it had, without asking; otherwise it asks once (waiting at
    most :data:`PREEMPT_POLL_TIMEOUT_S`), and if that fails, answers from the last answer
    too. The controller asks again at its next chunk boundary, so a
    pause or kill is seen once the master is back. A 4xx answer (401: the token was revoked)
    raises.
    """

    def __init__(self, client: MasterClient, sender: ReportSender) -> None:
        self._client = client
        self._sender = sender
        self._last = False

    def should_preempt(self) -> bool:
        if self._sender.waiting and self._client.unreachable:
            return self._last
        try:
            answer = self._client.get(
                f"{self._client.trial_path}/preempt",
                give_up_after=0,
                timeout=PREEMPT_POLL_TIMEOUT_S,
            )
        except MasterError as err:
            if err.status is not None:
                raise
            return self._last
        self._last = bool(answer.get("preempt"))
        return self._last
