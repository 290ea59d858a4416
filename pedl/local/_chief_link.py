"""The line between a local multi-worker trial's chief and the run's process.

Local mode runs every rank of a multi-worker trial as a fresh ``python -m pedl.local.worker``
process (as a master does), so the chief (rank 0) is not in the process that keeps the run's
record. The run's process serves one :class:`ChiefLink` per attempt (a
:class:`pedl.core._link_transport.LinkServer`: a Unix socket in a private directory, a random key).
The chief connects with :meth:`ChiefBackend.connect` (from the variables :attr:`ChiefLink.env` gives
it) and uses the result as its core context's backend (a
:class:`pedl.core._backend_link.LinkBackend`): each call is one request and one answer, run in the
run's process by local mode's backend of the trial; at its end the chief sends its attempt's result
(:meth:`ChiefBackend.report_result`, read as :attr:`ChiefLink.result`). A call the backend raises
for raises :class:`pedl.core._link_transport.LinkError` in the chief.
"""

from __future__ import annotations

import logging
import os
from collections.abc import MutableMapping
from typing import Any

from pedl.core import TrialBackend
from pedl.core._backend_link import LinkBackend, backend_handlers
from pedl.core._link_transport import LinkClient, LinkServer
from pedl.exec import AttemptResult

logger = logging.getLogger("pedl.local")

ADDRESS_ENV = "PEDL_CHIEF_LINK"
"""The chief's variable naming the link's socket."""
KEY_ENV = "PEDL_CHIEF_LINK_KEY"
"""The chief's variable holding the link's authkey (hex); removed from its environment."""

_RESULT = "result"
_PEER = "the run's process"


class ChiefLink:
    """The run's end of one attempt's link: serves ``backend`` (the trial's, in the run's
    process) until :meth:`close`."""

    def __init__(self, backend: TrialBackend) -> None:
        self.result: AttemptResult | None = None
        """The attempt's result, once the chief reported it."""
        self._server = LinkServer(
            {**backend_handlers(backend), _RESULT: self._take_result},
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


class ChiefBackend(LinkBackend):
    """The chief's end: its core context's backend, each call answered by the run's process;
    and the attempt's result."""

    @classmethod
    def connect(cls, environ: MutableMapping[str, str] = os.environ) -> ChiefBackend | None:
        """Connect to the link ``environ`` names (removing its key), or None when it names
        none (a rank other than the chief)."""
        client = LinkClient.connect(
            environ, address_env=ADDRESS_ENV, key_env=KEY_ENV, peer=_PEER, pop=True
        )
        return cls(client) if client is not None else None

    def report_result(self, result: AttemptResult) -> None:
        """Tell the run's process how this attempt ended (once, at its end)."""
        self._client.call(_RESULT, result.outcome, result.error, result.stage)
