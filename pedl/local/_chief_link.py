"""The line between a local multi-worker trial's chief and the run's process.

Local mode runs every rank of a multi-worker trial as a fresh ``python -m pedl.local.worker``
process (as a master does), so the chief (rank 0) is not in the process that keeps the run's
record. The run's process serves one :class:`ChiefLink` per attempt: a
:class:`multiprocessing.connection.Listener` on a Unix socket in a private temporary
directory (mode 0700) with a random authkey, answered by one thread. The chief connects with
:meth:`LinkedParts.connect` (from the variables :attr:`ChiefLink.env` gives it) and uses the
result as its core context's metrics writer, checkpoint registry, searcher session and
preemption check: each call is one request and one answer, run in the run's process by the
handler of that name; at its end the chief sends its attempt's result
(:meth:`LinkedParts.report_result`, read as :attr:`ChiefLink.result`). A handler that
raises makes the call raise :class:`LinkError` in the chief.
"""

from __future__ import annotations

import contextlib
import logging
import os
import secrets
import shutil
import tempfile
import threading
from collections.abc import Callable, Mapping, MutableMapping
from multiprocessing.connection import Client, Connection, Listener
from typing import Any

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


class LinkError(RuntimeError):
    """The run's process could not carry out a call of the chief."""


class ChiefLink:
    """The run's end of one attempt's link: serves ``handlers`` (one per name in
    :data:`HANDLERS`) from a thread until :meth:`close`."""

    def __init__(self, handlers: Mapping[str, Callable[..., Any]]) -> None:
        missing = set(HANDLERS) - set(handlers)
        if missing:
            raise ValueError(f"no handler for {', '.join(sorted(missing))}")
        self._handlers = dict(handlers)
        self._directory = tempfile.mkdtemp(prefix="pedl-chief-")
        self._address = os.path.join(self._directory, "link.sock")
        self._authkey = secrets.token_bytes(32)
        self._listener = Listener(self._address, family="AF_UNIX", authkey=self._authkey)
        self._closed = threading.Event()
        self.result: AttemptResult | None = None
        """The attempt's result, once the chief reported it."""
        self._thread = threading.Thread(target=self._serve, name="pedl-chief-link", daemon=True)
        self._thread.start()

    @property
    def env(self) -> dict[str, str]:
        """The variables the chief's process needs to connect."""
        return {ADDRESS_ENV: self._address, KEY_ENV: self._authkey.hex()}

    def close(self) -> None:
        """Stop serving (after the chief's process ended) and remove the socket."""
        self._closed.set()
        with contextlib.suppress(Exception):  # wake the thread if it waits in accept
            Client(self._address, family="AF_UNIX", authkey=self._authkey).close()
        self._thread.join(timeout=10)
        self._listener.close()
        shutil.rmtree(self._directory, ignore_errors=True)

    def _serve(self) -> None:
        while not self._closed.is_set():
            try:
                connection = self._listener.accept()
            except Exception:  # a peer without the key, or one that hung up at once
                continue
            with connection:
                self._answer(connection)

    def _answer(self, connection: Connection) -> None:
        while True:
            try:
                name, args = connection.recv()
            except Exception:  # the chief ended (EOF) or sent what cannot be read
                return
            try:
                if name == _RESULT:
                    self.result = AttemptResult(*args)
                    reply: tuple[str, Any] = ("ok", None)
                else:
                    reply = ("ok", self._handlers[name](*args))
            except Exception as error:
                logger.exception("the chief's call %s failed", name)
                reply = ("error", f"{name}: {type(error).__name__}: {error}")
            try:
                connection.send(reply)
            except OSError:
                return


class LinkedParts:
    """The chief's end: the core context's metrics writer, checkpoint registry, searcher
    session and preemption check, each call answered by the run's process."""

    def __init__(self, connection: Connection) -> None:
        self._connection = connection
        self._lock = threading.Lock()

    @classmethod
    def connect(cls, environ: MutableMapping[str, str] = os.environ) -> LinkedParts | None:
        """Connect to the link ``environ`` names (removing its key), or None when it names
        none (a rank other than the chief)."""
        address = environ.pop(ADDRESS_ENV, None)
        key = environ.pop(KEY_ENV, None)
        if not address or not key:
            return None
        return cls(Client(address, family="AF_UNIX", authkey=bytes.fromhex(key)))

    def _call(self, name: str, *args: Any) -> Any:
        with self._lock:
            self._connection.send((name, args))
            status, value = self._connection.recv()
        if status != "ok":
            raise LinkError(f"the run's process could not carry out {value}")
        return value

    def write_metrics(
        self, kind: MetricKind, total_batches: int, metrics: Mapping[str, float]
    ) -> None:
        self._call("write_metrics", MetricKind(kind), total_batches, dict(metrics))

    def register_checkpoint(
        self,
        storage_id: str,
        total_batches: int,
        metadata: Mapping[str, Any],
        resources: Mapping[str, int],
    ) -> None:
        self._call(
            "register_checkpoint", storage_id, total_batches, dict(metadata), dict(resources)
        )

    def next_length(self) -> int | None:
        length: int | None = self._call("next_length")
        return length

    def complete(self, length: int, searcher_metric: float) -> None:
        self._call("complete", length, searcher_metric)

    def should_preempt(self) -> bool:
        return bool(self._call("should_preempt"))

    def report_result(self, result: AttemptResult) -> None:
        """Tell the run's process how this attempt ended (once, at its end)."""
        self._call(_RESULT, result.outcome, result.error, result.stage)

    def close(self) -> None:
        self._connection.close()
