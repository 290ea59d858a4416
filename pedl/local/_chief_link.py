"""The line between a local multi-worker trial's chief and the run's process.

Local mode runs every rank of a multi-worker trial as a fresh ``python -m pedl.local.worker``
process (as a master does), so the chief (rank 0) is not in the process that keeps the run's
record. The run's process serves one :class:`ChiefLink` per attempt (a
:class:`pedl.core.LinkServer`: a Unix socket in a private directory, a random key). The chief
connects with :meth:`LinkedParts.connect` (from the variables :attr:`ChiefLink.env` gives it)
and uses the result as its core context's metrics writer, checkpoint registry, searcher session and
preemption check: each call is one request and one answer, run in the run's process by the
handler of that name; at its end the chief sends its attempt's result
(:meth:`LinkedParts.report_result`, read as :attr:`ChiefLink.result`). A handler that
raises makes the call raise :class:`pedl.core.LinkError` in the chief.
"""

from __future__ import annotations

import logging
import os
from collections.abc import Callable, Mapping, MutableMapping
from typing import Any

from pedl.core import LinkClient, LinkServer
from pedl.engine import MetricKind
from pedl.exec import AttemptResult

logger = logging.getLogger("pedl.local")

ADDRESS_ENV = "PEDL_CHIEF_LINK"
"""The chief's variable naming the link's socket."""
KEY_ENV = "PEDL_CHIEF_LINK_KEY"
"""The chief's variable holding the link's authkey (hex); removed from its environment."""

HANDLERS = ("write_metrics", "register_checkpoint", "next_length", "complete", "should_preempt")
"""The calls a chief makes over the link (each a handler of :class:`ChiefLink`)."""

_RESULT = "result"
_PEER = "the run's process"


class ChiefLink:
    """The run's end of one attempt's link: serves ``handlers`` (one per name in
    :data:`HANDLERS`) until :meth:`close`."""

    def __init__(self, handlers: Mapping[str, Callable[..., Any]]) -> None:
        missing = set(HANDLERS) - set(handlers)
        if missing:
            raise ValueError(f"no handler for {', '.join(sorted(missing))}")
        self.result: AttemptResult | None = None
        """The attempt's result, once the chief reported it."""
        self._server = LinkServer(
            {**handlers, _RESULT: self._take_result},
            address_env=ADDRESS_ENV,
            key_env=KEY_ENV,
            name="pedl-chief-link",
            logger=logger,
        )

    @property
    def env(self) -> dict[str, str]:
        """The variables the chief's process needs to connect."""
        return self._server.env

    def close(self) -> None:
        """Stop serving (after the chief's process ended) and remove the socket."""
        self._server.close()

    def _take_result(self, *fields: Any) -> None:
        self.result = AttemptResult(*fields)


class LinkedParts:
    """The chief's end: the core context's metrics writer, checkpoint registry, searcher
    session and preemption check, each call answered by the run's process."""

    def __init__(self, client: LinkClient) -> None:
        self._client = client

    @classmethod
    def connect(cls, environ: MutableMapping[str, str] = os.environ) -> LinkedParts | None:
        """Connect to the link ``environ`` names (removing its key), or None when it names
        none (a rank other than the chief)."""
        client = LinkClient.connect(
            environ, address_env=ADDRESS_ENV, key_env=KEY_ENV, peer=_PEER, pop=True
        )
        return cls(client) if client is not None else None

    def write_metrics(
        self, kind: MetricKind, total_batches: int, metrics: Mapping[str, float]
    ) -> None:
        self._client.call("write_metrics", MetricKind(kind), total_batches, dict(metrics))

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
        self._client.call("complete", length, searcher_metric)

    def should_preempt(self) -> bool:
        return bool(self._client.call("should_preempt"))

    def report_result(self, result: AttemptResult) -> None:
        """Tell the run's process how this attempt ended (once, at its end)."""
        self._client.call(_RESULT, result.outcome, result.error, result.stage)

    def close(self) -> None:
        self._client.close()
