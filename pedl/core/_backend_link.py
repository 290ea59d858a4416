"""A trial backend over a link: a process without the trial's backend forwards its five calls
to the process that has it.

:func:`backend_handlers` gives a :class:`~pedl.core.LinkServer` the handlers that run each call
on the serving process's backend; :class:`LinkBackend` is the other end, a
:class:`~pedl.core.TrialBackend` whose every call is one request and one answer over a
:class:`~pedl.core.LinkClient`. Local mode's multi-worker chief (:mod:`pedl.local._chief_link`)
and the processes a Core API script starts (:mod:`pedl.core._link`) use it.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from typing import Any

from pedl.core._backend import BACKEND_CALLS, TrialBackend
from pedl.core._link_transport import LinkClient
from pedl.vocabulary import MetricKind


def backend_handlers(backend: TrialBackend) -> dict[str, Callable[..., Any]]:
    """The link handlers that answer :class:`LinkBackend`'s calls from ``backend``."""
    return {name: getattr(backend, name) for name in BACKEND_CALLS}


class LinkBackend:
    """The :class:`~pedl.core.TrialBackend` of the process at the other end of ``client``
    (served with :func:`backend_handlers`). A call the other end could not carry out raises
    :class:`~pedl.core.LinkError`, as does one after the link is gone."""

    def __init__(self, client: LinkClient) -> None:
        self._client = client

    def write_metrics(
        self,
        kind: MetricKind,
        total_batches: int,
        metrics: Mapping[str, float],
        total_epochs: float | None = None,
    ) -> None:
        self._client.call(
            "write_metrics", MetricKind(kind), total_batches, dict(metrics), total_epochs
        )

    def register_checkpoint(
        self,
        storage_id: str,
        total_batches: int,
        metadata: Mapping[str, Any],
        resources: Mapping[str, int],
    ) -> None:
        self._client.call(
            "register_checkpoint", storage_id, total_batches, dict(metadata), dict(resources)
        )

    def next_length(self) -> int | None:
        length: int | None = self._client.call("next_length")
        return length

    def complete(self, length: int, searcher_metric: float) -> None:
        self._client.call("complete", length, float(searcher_metric))

    def should_preempt(self) -> bool:
        return bool(self._client.call("should_preempt"))

    def close(self) -> None:
        self._client.close()
