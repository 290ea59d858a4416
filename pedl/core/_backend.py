"""The trial backend: the five calls a trial makes of its platform (see DESIGN.md, "The harness").

Each place a trial can run has one class that answers them: REST to the master
(:class:`pedl.exec.RestBackend`), local mode in-process (``pedl.local``'s ``LocalBackend``), a link
to a parent process (:class:`pedl.core._backend_link.LinkBackend`, served with
:func:`pedl.core._backend_link.backend_handlers`), in memory (:class:`pedl.core.MemoryBackend`) and
detached (:class:`pedl.core._detached.DetachedBackend`). ``tests/core/test_backend_contract.py``
runs every one of them through the same cases.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any, Protocol

from pedl.vocabulary import MetricKind

BACKEND_CALLS = (
    "write_metrics",
    "register_checkpoint",
    "next_length",
    "complete",
    "should_preempt",
)
"""The names of :class:`TrialBackend`'s calls (what a link serves)."""


class TrialBackend(Protocol):
    """Where a trial's reports go and where its work comes from; the core context's parts
    (:func:`pedl.core.build_context`) are built on one backend.

    Contract, for every implementation:

    - **Order.** Calls take effect in the order they are made: a metrics row or checkpoint
      written before ``complete`` or ``next_length`` is recorded before the platform acts
      on that call (a backend that queues its reports sends them in order, and sends every
      one before it asks for the next length).
    - ``write_metrics(kind, total_batches, metrics)`` records one row per
      ``(kind, total_batches)`` for this trial: writing the same key again (a trial replays
      its batches after a resume) replaces the row, latest wins; it never adds a second one.
      ``metrics`` maps names to floats (NaN and the infinities included). ``total_epochs``
      (finite, >= 0; None where the trial does not know it) is recorded with the row (the
      epochs axis of its curves; a script's ``fit`` counts its data's epochs).
    - ``register_checkpoint(storage_id, total_batches, metadata, resources)`` records a
      checkpoint whose files are already stored, once per checkpoint; one never registered
      does not exist for the platform. When it returns the platform has it, unless it cannot
      be reached (then it is sent as soon as it can be).
    - ``next_length()`` is the absolute length (in the experiment's searcher unit, > 0) the
      trial must train to next, or None: no more work for this trial now (the trial closed,
      or it waits for the searcher; the trial then stops and is started again when there is
      work). Asking again before ``complete`` gives the same length.
    - ``complete(length, searcher_metric)`` reports that the trial trained to ``length`` (a
      length ``next_length`` gave) and validated; once per length. After it ``next_length``
      gives a greater length or None. A length past the largest one asked is refused.
    - ``should_preempt()`` says whether the trial should checkpoint and exit now (pause, kill,
      searcher stop, drain, SIGINT in local mode); False until the platform asks, and cheap
      enough to ask at every chunk boundary.
    - **Threads.** Calls come from the trial's one training thread; an implementation need not
      take concurrent calls (the link's server runs a peer's calls one at a time).
    - **Errors.** A call raises when the platform refused it or is gone for good (in memory and
      local mode ValueError, REST :class:`pedl.exec.MasterError`, a link
      :class:`pedl.core._link_transport.LinkError`); a backend that queues its reports raises a
      queued report's refusal from its next call. A platform only out of reach for a while is waited
      for, not raised.
    """

    def write_metrics(
        self,
        kind: MetricKind,
        total_batches: int,
        metrics: Mapping[str, float],
        total_epochs: float | None = None,
    ) -> None: ...

    def register_checkpoint(
        self,
        storage_id: str,
        total_batches: int,
        metadata: Mapping[str, Any],
        resources: Mapping[str, int],
    ) -> None: ...

    def next_length(self) -> int | None: ...

    def complete(self, length: int, searcher_metric: float) -> None: ...

    def should_preempt(self) -> bool: ...
