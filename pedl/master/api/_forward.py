"""Forwarding the API's database reads to read processes.

The master is one Python process: its event loop, its worker threads and its metric writer
share one GIL, so it never uses more than about one core, however many the machine has. The
dashboards' polling reads (an experiment's trials, a trial's metrics) cost as much CPU as the
trials' metric reports, and while a worker thread serializes a page of trials, the event loop
that answers the reports waits for the GIL. So the reads that need nothing but the database
(:data:`READ_ROUTES`) can be served by other processes: each runs the same app (the same
routes, dependencies, validation and errors: :func:`~pedl.master.api.create_app` with
``reads_only``) on a Unix socket, on the same database, and :class:`ReadForwarder` in the
master sends them those GET requests and relays the answers byte for byte.

An answer is the same wherever it is computed: a read runs in its own transaction, begun
after the master received the request, so it sees every write the master acknowledged before
(reports are acknowledged only once committed). When no read process answers (none started
yet, one restarting, a broken connection, no answer within :data:`FORWARD_TIMEOUT_S`), the
master serves the request itself: a GET changes nothing, so it is safe to run it again.
"""

from __future__ import annotations

import asyncio
import logging
import re
from collections.abc import Callable, Iterable, Sequence
from contextlib import suppress
from dataclasses import dataclass, field
from typing import Protocol

from fastapi.routing import APIRoute
from starlette.routing import compile_path
from starlette.types import ASGIApp, Receive, Scope, Send

from pedl.master.api._errors import error_response

logger = logging.getLogger("pedl.master.api")

READ_ROUTES = frozenset(
    {
        "list_experiments",
        "get_experiment",
        "list_experiment_trials",
        "list_experiment_checkpoints",
        "get_trial",
        "get_metrics",
        "get_logs",
        "list_trial_checkpoints",
        "get_checkpoint",
    }
)
"""The routes (by name) a read process serves: GETs that only read the database and need
nothing of the master's process (no orchestrator, no metric writer, no files, small answers).
The others (trial operations, downloads, model definitions, health, the OpenAPI documents)
are always served by the master itself."""


class ReadRoutes:
    """Which requests are reads of :data:`READ_ROUTES`, from the app's routes: a GET without
    a body whose path matches the template of a read route and of no other GET route (the
    same answer whatever the order the router tries them in)."""

    def __init__(self, routes: Iterable[APIRoute], prefix: str = "") -> None:
        read: list[re.Pattern[str]] = []
        other: list[re.Pattern[str]] = []
        for route in routes:
            if "GET" in (route.methods or ()):
                pattern = compile_path(prefix + route.path)[0]
                (read if route.name in READ_ROUTES else other).append(pattern)
        self._read = read
        self._other = other

    def is_read(self, scope: Scope) -> bool:
        if scope["type"] != "http" or scope["method"] != "GET":
            return False
        for name, value in scope["headers"]:
            if name in (b"content-length", b"transfer-encoding") and value not in (b"0", b""):
                return False
        path = scope["path"]
        return any(p.match(path) for p in self._read) and not any(
            p.match(path) for p in self._other
        )


FORWARD_TIMEOUT_S = 60.0
"""How long the master waits for a read process's answer before serving the request itself
(longer than any wait a read has in the process: its pool and SQLite busy timeouts)."""

MAX_IDLE_CONNECTIONS = 64
"""Idle keep-alive connections kept per read process."""

_HOP_BY_HOP = frozenset(
    {
        b"connection",
        b"keep-alive",
        b"proxy-connection",
        b"te",
        b"trailer",
        b"transfer-encoding",
        b"upgrade",
        b"content-length",
    }
)
# uvicorn adds its own Date and Server headers to every answer.
_ANSWER_HEADERS_DROPPED = _HOP_BY_HOP - {b"content-length"} | {b"date", b"server"}


class ReadSource(Protocol):
    """The read processes as :class:`ReadForwarder` and the app's lifespan see them.

    ``start`` is awaited once the database is migrated, ``stop`` when the app shuts down.
    ``sockets`` is called on the event loop for every forwarded request, so it must be cheap
    and must not block: the Unix sockets of the processes that should be serving now (maybe
    still starting: a connection that fails is answered by the master itself).
    """

    async def start(self) -> None: ...

    async def stop(self) -> None: ...

    def sockets(self) -> Sequence[str]: ...


Connection = tuple[asyncio.StreamReader, asyncio.StreamWriter]


class Forwarding:
    """The master's side of its read processes (``app.state.read_forwarding``): what was
    forwarded, and the idle keep-alive connections to each process, closed by
    :meth:`close` when the app stops."""

    def __init__(self) -> None:
        self.forwarded = 0
        """Reads a read process answered."""
        self.served_here = 0
        """Reads of :data:`READ_ROUTES` the master served itself: no read process answered."""
        self.reports_checked = 0
        """Metric reports a read process checked (:mod:`pedl.master.api._report_check`)."""
        self._idle: dict[str, list[Connection]] = {}
        self._turn = 0

    def pick(self, sockets: Sequence[str]) -> str | None:
        """The next of ``sockets`` in turn (round robin over every request forwarded), or
        ``None`` when there is none."""
        if not sockets:
            return None
        self._turn += 1
        return sockets[self._turn % len(sockets)]

    def take(self, path: str) -> Connection | None:
        """An idle connection to the process on ``path``, if any."""
        idle = self._idle.get(path)
        return idle.pop() if idle else None

    def give_back(self, path: str, connection: Connection) -> None:
        pool = self._idle.setdefault(path, [])
        if len(pool) < MAX_IDLE_CONNECTIONS:
            pool.append(connection)
        else:
            connection[1].close()

    def drop(self, path: str) -> None:
        """Close the idle connections to the process on ``path``."""
        for _reader, writer in self._idle.pop(path, []):
            writer.close()

    async def close(self) -> None:
        """Close every idle connection."""
        writers = [writer for pool in self._idle.values() for _reader, writer in pool]
        self._idle.clear()
        for writer in writers:
            writer.close()
        for writer in writers:
            with suppress(OSError):
                await writer.wait_closed()


@dataclass
class Answer:
    """A read process's answer to a forwarded request."""

    status: int
    headers: list[tuple[bytes, bytes]] = field(default_factory=list)
    body: bytes = b""
    reusable: bool = True


class _Broken(Exception):
    """The read process's connection failed or its answer was not HTTP/1.1 we understand."""


def _bearer(scope: Scope) -> str | None:
    """The bearer token of a request, if it has one."""
    for name, value in scope["headers"]:
        if name == b"authorization":
            scheme, _, token = value.decode("latin-1").partition(" ")
            return token.strip() if scheme.lower() == "bearer" else None
    return None


class ReadForwarder:
    """ASGI middleware: a GET of a :data:`READ_ROUTES` route (no body) is sent to a read
    process from ``source`` (round robin, keep-alive connections over its Unix socket) and its
    answer relayed; everything else, and a read no process answers, goes to ``app``. So does
    a read whose bearer token ``revoked_lately`` (a read process's token cache may still
    trust it; ``app`` checks it against the database)."""

    def __init__(
        self,
        app: ASGIApp,
        *,
        routes: ReadRoutes,
        source: ReadSource,
        forwarding: Forwarding,
        revoked_lately: Callable[[str | None], bool],
        timeout_s: float = FORWARD_TIMEOUT_S,
    ) -> None:
        self.app = app
        self.routes = routes
        self.source = source
        self.forwarding = forwarding
        self.revoked_lately = revoked_lately
        self.timeout_s = timeout_s

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if self.routes.is_read(scope) and not self.revoked_lately(_bearer(scope)):
            path = self.forwarding.pick(self.source.sockets())
            answer = None
            if path is not None:
                answer = await forward(self.forwarding, path, _request_bytes(scope), self.timeout_s)
            if answer is not None:
                self.forwarding.forwarded += 1
                headers = [*answer.headers, (b"content-length", b"%d" % len(answer.body))]
                start = {"type": "http.response.start", "status": answer.status}
                await send({**start, "headers": headers})
                await send({"type": "http.response.body", "body": answer.body})
                return
            self.forwarding.served_here += 1
        await self.app(scope, receive, send)


class ReadsOnly:
    """ASGI middleware of a read process's app: anything but a read of :data:`READ_ROUTES`
    (or the health check) is answered 404 (the master never sends it one)."""

    def __init__(self, app: ASGIApp, *, routes: ReadRoutes) -> None:
        self.app = app
        self.routes = routes

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if (
            scope["type"] != "http"
            or self.routes.is_read(scope)
            or scope["path"].endswith("/health")
        ):
            await self.app(scope, receive, send)
            return
        await error_response(404, "a read process serves only reads")(scope, receive, send)


_FAILURES = (
    OSError,
    TimeoutError,
    ValueError,
    _Broken,
    asyncio.IncompleteReadError,
    asyncio.LimitOverrunError,
)


async def forward(
    forwarding: Forwarding, path: str, request: bytes, timeout_s: float
) -> Answer | None:
    """The answer of the read process on ``path`` to ``request`` (an HTTP/1.1 request's
    bytes), or None if it gave none within ``timeout_s`` (after one retry on a fresh
    connection when a kept-alive one of ``forwarding`` turns out to be closed)."""
    for _attempt in range(2):
        connection = forwarding.take(path)
        fresh = connection is None
        try:
            async with asyncio.timeout(timeout_s):
                if connection is None:
                    connection = await asyncio.open_unix_connection(path)
        except (OSError, TimeoutError):
            return None  # not listening (yet, or any more)
        reader, writer = connection
        try:
            async with asyncio.timeout(timeout_s):
                writer.write(request)
                answer = await _read_answer(reader)
        except _FAILURES as err:
            writer.close()
            if fresh:
                logger.warning("the read process on %s gave no answer: %r", path, err)
                return None
            # A kept-alive connection the process had closed (it restarted?): drop the
            # others too, and try once more on a fresh one.
            forwarding.drop(path)
            continue
        except BaseException:
            writer.close()  # cancelled: the connection is in an unknown state
            raise
        if answer.reusable:
            forwarding.give_back(path, connection)
        else:
            writer.close()
        return answer
    return None


def _request_bytes(scope: Scope) -> bytes:
    target = scope["raw_path"] or scope["path"].encode()
    if scope["query_string"]:
        target += b"?" + scope["query_string"]
    lines = [b"GET " + target + b" HTTP/1.1"]
    has_host = False
    for name, value in scope["headers"]:
        if name in _HOP_BY_HOP:
            continue
        has_host = has_host or name == b"host"
        lines.append(name + b": " + value)
    if not has_host:
        lines.append(b"host: pedl-master")
    return b"\r\n".join(lines) + b"\r\n\r\n"


async def _read_answer(reader: asyncio.StreamReader) -> Answer:
    head = await reader.readuntil(b"\r\n\r\n")
    status_line, *header_lines = head[:-4].split(b"\r\n")
    parts = status_line.split(b" ", 2)
    if len(parts) < 2 or parts[0] != b"HTTP/1.1" or not parts[1].isdigit():
        raise _Broken(f"not an HTTP/1.1 status line: {status_line[:100]!r}")
    answer = Answer(status=int(parts[1]))
    length: int | None = None
    chunked = False
    for line in header_lines:
        name, _, value = line.partition(b":")
        name, value = name.strip().lower(), value.strip()
        if name == b"content-length":
            length = int(value)
        elif name == b"transfer-encoding":
            chunked = value.lower() == b"chunked"
        elif name == b"connection" and value.lower() == b"close":
            answer.reusable = False
        if name not in _ANSWER_HEADERS_DROPPED and name != b"content-length":
            answer.headers.append((name, value))
    if chunked:
        answer.body = await _read_chunked(reader)
    elif length is not None:
        answer.body = await reader.readexactly(length)
    else:
        answer.body = await reader.read()
        answer.reusable = False
    return answer


async def _read_chunked(reader: asyncio.StreamReader) -> bytes:
    chunks: list[bytes] = []
    while True:
        size_line = await reader.readuntil(b"\r\n")
        size = int(size_line.split(b";", 1)[0].strip(), 16)
        if size == 0:
            while await reader.readuntil(b"\r\n") != b"\r\n":
                pass  # trailers
            return b"".join(chunks)
        chunks.append(await reader.readexactly(size))
        await reader.readexactly(2)
