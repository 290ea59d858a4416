"""The cluster's trial backend: :class:`RestBackend`, REST calls to the master over one
:class:`MasterClient` and one :class:`ReportSender`.

Training does not wait for an unreachable master: metric reports, checkpoint registrations
and searcher completions go through the sender's queue, in order, and the preemption poll
answers from its last answer while the master cannot be reached. The request for the next
searcher operation waits (the trial cannot know how far to train without it); it first waits
for every queued report to be sent, so the master acts on it knowing all that came before. A
checkpoint registration waits for the master too while it answers (up to
:data:`CHECKPOINT_SETTLE_S`): a trial killed just after a checkpoint restarts from it.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from pedl.exec._master_client import MasterClient, MasterError
from pedl.exec._report_sender import ReportSender
from pedl.vocabulary import MetricKind, encode_metric_values

CHECKPOINT_SETTLE_S = 10.0
"""How long a checkpoint registration waits for the master to have it (and every report
before it) while the master answers; an unreachable master is not waited for."""
PREEMPT_POLL_TIMEOUT_S = 5.0
"""How long one preemption poll waits for the master's answer before it is given up."""


class RestBackend:
    """A :class:`pedl.core.TrialBackend` that talks to the master (``/trials/{id}/...``).

    - ``write_metrics`` queues each report (one per chunk or validation) as one row; the
      master upserts it on ``(kind, total_batches)``, so re-sending after a resume neither
      loses nor doubles rows.
    - ``register_checkpoint`` queues the registration of a stored checkpoint (COMPLETED),
      after the reports made before it: the master records the checkpoint only once its
      files are stored. Then it waits until the master has it, unless the master cannot be
      reached (see :meth:`ReportSender.settle`): otherwise a process killed a moment after
      its checkpoint would restart from the one before.
    - ``next_length`` first flushes the sender, then asks ``GET .../searcher/operation``,
      which long-polls on the master: it answers with a length, says the trial is closed, or
      says ``wait`` (the searcher has no work for the trial yet, e.g. an ASHA trial waiting
      for its rung to fill). On ``wait`` the process stops for now (it checkpoints and exits,
      freeing its slot); the master starts the trial again from that checkpoint when the
      searcher gives it more work. ``complete`` is queued behind the reports made before it.
    - ``should_preempt`` asks ``GET .../preempt`` (pause, cancel, kill, drain). While the
      report sender is retrying (reports wait, and the client's latest try failed) it answers
      from the last answer it had, without asking; otherwise it asks once (waiting at most
      :data:`PREEMPT_POLL_TIMEOUT_S`), and if that fails, answers from the last answer too.
      The controller asks again at its next chunk boundary, so a pause or kill is seen once
      the master is back. A 4xx answer (401: the token was revoked) raises.
    """

    def __init__(self, client: MasterClient, sender: ReportSender) -> None:
        self._client = client
        self._sender = sender
        self._trial_path = client.trial_path
        self._last_preempt = False

    def write_metrics(
        self,
        kind: MetricKind,
        total_batches: int,
        metrics: Mapping[str, float],
        total_epochs: float | None = None,
    ) -> None:
        row = {
            "kind": kind,
            "total_batches": total_batches,
            "metrics": encode_metric_values(metrics),
        }
        if total_epochs is not None:
            row["total_epochs"] = total_epochs
        self._sender.send(f"{self._trial_path}/metrics", {"rows": [row]})

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
                "metadata": encode_metric_values(metadata),
                "resources": dict(resources),
            },
        )
        self._sender.settle(CHECKPOINT_SETTLE_S)

    def next_length(self) -> int | None:
        self._sender.flush()
        answer = self._client.get(f"{self._trial_path}/searcher/operation")
        if answer.get("status") == "train":
            return int(answer["length"])
        return None

    def complete(self, length: int, searcher_metric: float) -> None:
        self._sender.send(
            f"{self._trial_path}/searcher/completed",
            {"length": length, "metric": encode_metric_values(float(searcher_metric))},
        )

    def should_preempt(self) -> bool:
        if self._sender.waiting and self._client.unreachable:
            return self._last_preempt
        try:
            answer = self._client.get(
                f"{self._trial_path}/preempt",
                give_up_after=0,
                timeout=PREEMPT_POLL_TIMEOUT_S,
            )
        except MasterError as err:
            if err.status is not None:
                raise
            return self._last_preempt
        self._last_preempt = bool(answer.get("preempt"))
        return self._last_preempt
