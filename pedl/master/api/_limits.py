"""Limits on what one request may carry, checked before any route (fast paths included) sees it.

:class:`RequestLimits` is an ASGI layer in front of the master's app (inside
:class:`~._app.InFlightLimit`, in front of the metric-report fast path and the read
forwarding). It answers in the standard error shape, naming the limit and its setting, in
this order:

- 400 when the URL carries a NUL character (``%00``);
- 401 or 403 when the caller may not use the route (:class:`~._auth.BodyAuth`, or the
  TensorBoard proxy's gate, on the headers alone): before a byte of the body is read, and
  before its size is looked at, so that a caller who is not signed in learns nothing of the
  route's limits;
- 413 when the body is larger than ``max_request_bytes`` (``max_upload_bytes`` for
  ``POST /experiments``, which carries the model definition): refused on its
  ``Content-Length`` at once, or as soon as the bytes streamed in pass the limit, never read
  whole;
- 503 with ``Retry-After`` when the body would take the bodies the master holds at once
  past ``max_upload_memory_bytes`` (:class:`BodyMemory`): at once on its ``Content-Length``,
  or as soon as its streamed bytes do;
- 400 when a JSON body nests arrays and objects deeper than ``max_json_depth`` (found by a
  scan of the raw bytes, before any parser recurses), or holds a lone UTF-16 surrogate
  (``"\\udcff"``, which no database can store as text).

A body that passes is handed on whole (one ``http.request`` message), but for a
``multipart/form-data`` body of ``POST /experiments``, which is streamed on to the route
(which spools its model definition to a file) with its bytes counted against the same
limits as they pass. A body's bytes count against ``max_upload_memory_bytes`` until the
request is answered.
"""

from __future__ import annotations

import re
from collections.abc import Awaitable, Callable

from starlette.responses import Response
from starlette.types import ASGIApp, Message, Receive, Scope, Send

from pedl.master.api._errors import ApiError, error_response

Authenticate = Callable[[Scope], Awaitable[Response | None]]
"""Checks a request on its headers alone: the answer refusing it, or ``None``."""

_BODILESS = frozenset({"GET", "HEAD", "DELETE", "OPTIONS"})

# A pair of escaped surrogates (high then low) is one character; any other escaped or raw
# (UTF-8-encoded, which json.loads decodes with surrogatepass) surrogate stands alone.
_SURROGATE_PAIR = re.compile(rb"\\u[dD][89abAB][0-9a-fA-F]{2}\\u[dD][c-fC-F][0-9a-fA-F]{2}")
_ESCAPED_SURROGATE = re.compile(rb"\\u[dD][89a-fA-F][0-9a-fA-F]{2}")
_RAW_SURROGATE = re.compile(rb"\xed[\xa0-\xbf]")
_STRING = re.compile(rb'"[^"]*"')
_NOT_BRACKET = bytes(b for b in range(256) if b not in b"[]{}")
_NOT_BRACKET_OR_QUOTE = bytes(b for b in range(256) if b not in b'[]{}"')
_OPENERS = frozenset(b"[{")


def _human(n: int) -> str:
    if n % (1024 * 1024) == 0:
        return f"{n // (1024 * 1024)} MiB"
    if n % 1024 == 0:
        return f"{n // 1024} KiB"
    return f"{n} bytes"


def _deeper_than(brackets: bytes, max_depth: int) -> bool:
    """Whether the running depth of ``brackets`` (only ``[]{}`` bytes) ever passes
    ``max_depth``; chunks that cannot pass it are skipped with two counts each."""
    depth = 0
    step = max(1, max_depth // 2)
    for start in range(0, len(brackets), step):
        chunk = brackets[start : start + step]
        opens = chunk.count(b"[") + chunk.count(b"{")
        if depth + opens <= max_depth:
            depth += 2 * opens - len(chunk)
            continue
        for byte in chunk:
            depth += 1 if byte in _OPENERS else -1
            if depth > max_depth:
                return True
    return False


def json_body_problem(body: bytes, max_depth: int) -> str | None:
    """Why a JSON body must be refused before parsing (too deep, a lone surrogate), or
    ``None``. Works on the raw bytes: escaped backslashes and quotes are dropped, then
    strings, then everything but brackets; the depth of what is left is the JSON's."""
    text = body
    escaped = b"\\" in body  # most bodies have no escape: three passes fewer
    if escaped:
        text = body.replace(b"\\\\", b"")  # an escaped backslash escapes nothing after it
        if b"\\u" in text and _ESCAPED_SURROGATE.search(_SURROGATE_PAIR.sub(b"", text)):
            return (
                "a string holds a lone UTF-16 surrogate escape (\\ud800-\\udfff), which is not text"
            )
    if b"\xed" in text and _RAW_SURROGATE.search(text):
        return "a string holds a UTF-8-encoded surrogate (\\ud800-\\udfff), which is not text"
    if escaped:
        text = text.replace(b'\\"', b"")
    # The brackets and quotes alone (a fifth of a metric report's bytes), then the strings
    # that hold no bracket dropped as pairs of adjacent quotes (C loops, no match object per
    # string): with an even number of quotes a bracket lies in a string exactly when an odd
    # number of quotes precede it, which dropping a pair does not change, so what is left
    # holds the same brackets outside strings. An odd number (an unterminated string, not
    # JSON) takes the plain way.
    brackets = text.translate(None, _NOT_BRACKET_OR_QUOTE)
    if brackets.count(b'"') % 2 == 0:
        brackets = brackets.replace(b'""', b"")
        if b'"' in brackets:
            brackets = _STRING.sub(b"", brackets)
    else:
        brackets = _STRING.sub(b"", text).translate(None, _NOT_BRACKET)
    if len(brackets) > max_depth and _deeper_than(brackets, max_depth):
        return (
            f"JSON nested deeper than {max_depth} levels of arrays and objects "
            "(setting max_json_depth)"
        )
    return None


def _is_json(scope: Scope) -> bool:
    for name, value in scope["headers"]:
        if name == b"content-type":
            return b"json" in value.lower()
    return True  # FastAPI parses a body without a content type as JSON


def _is_multipart(scope: Scope) -> bool:
    for name, value in scope["headers"]:
        if name == b"content-type":
            return value[:19].lower() == b"multipart/form-data"
    return False


class BodyMemory:
    """The bytes of the request bodies the master holds at once, against ``limit``
    (``max_upload_memory_bytes``). Uploads (``POST /experiments``) may hold ``limit -
    reserve`` together; the last ``reserve`` bytes (``max_request_bytes``) stay for the
    other requests, the trials' reports among them. A counter, no lock: the event loop is
    one thread."""

    def __init__(self, limit: int, *, reserve: int) -> None:
        self.limit = limit
        self.reserve = reserve
        self.held = 0

    def take(self, size: int, *, upload: bool) -> bool:
        """Hold ``size`` more bytes, unless that would pass the limit (``False``)."""
        if self.held + size > self.limit - (self.reserve if upload else 0):
            return False
        self.held += size
        return True

    def give(self, size: int) -> None:
        """Release ``size`` bytes that :meth:`take` held."""
        self.held -= size


class _Held:
    """What one request holds of a :class:`BodyMemory`."""

    def __init__(self, memory: BodyMemory | None, *, upload: bool) -> None:
        self.memory = memory
        self.upload = upload
        self.size = 0

    def take(self, size: int) -> bool:
        if self.memory is None or size == 0:
            return True
        if not self.memory.take(size, upload=self.upload):
            return False
        self.size += size
        return True

    def release(self) -> None:
        if self.memory is not None:
            self.memory.give(self.size)
        self.size = 0


class RequestLimits:
    """ASGI layer: the size, caller, memory, JSON depth and text limits of every HTTP
    request (see the module's docstring). ``upload_path`` is the one route (``POST``)
    allowed ``max_upload`` bytes; every other gets ``max_body``. ``authenticate`` (the
    app's :class:`~._auth.BodyAuth`) is asked before a body is read; ``memory`` bounds the
    bodies held at once, its 503s carrying ``Retry-After: retry_after_s``."""

    def __init__(
        self,
        app: ASGIApp,
        *,
        max_body: int,
        max_upload: int,
        upload_path: str,
        max_json_depth: int,
        authenticate: Authenticate | None = None,
        memory: BodyMemory | None = None,
        retry_after_s: int = 1,
    ) -> None:
        self.app = app
        self.max_body = max_body
        self.max_upload = max_upload
        self.upload_path = upload_path
        self.max_json_depth = max_json_depth
        self.authenticate = authenticate
        self.memory = memory
        self.retry_after_s = retry_after_s

    def _no_memory(self) -> ApiError:
        assert self.memory is not None
        return ApiError(
            503,
            f"the master holds {_human(self.memory.held)} of request bodies, near its limit of "
            f"{_human(self.memory.limit)} (its max_upload_memory_bytes setting); retry later",
            field="body",
            headers={"Retry-After": str(self.retry_after_s)},
        )

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] != "http":
            await self.app(scope, receive, send)
            return
        if "\x00" in scope["path"] or b"%00" in scope.get("query_string", b""):
            response = error_response(400, "NUL characters are not allowed in the URL", field="url")
            await response(scope, receive, send)
            return
        headers = dict(scope["headers"])
        length = headers.get(b"content-length")
        chunked = b"transfer-encoding" in headers
        if scope["method"] in _BODILESS and not chunked and length in (None, b"0"):
            await self.app(scope, receive, send)
            return
        upload = scope["method"] == "POST" and scope["path"] == self.upload_path
        limit = self.max_upload if upload else self.max_body
        setting = "max_upload_bytes" if upload else "max_request_bytes"

        def too_large() -> Response:  # made only when needed: an error body costs ~30 µs
            return error_response(
                413,
                f"the request body is larger than {_human(limit)} (the master's {setting} setting)",
                field="body",
            )

        if self.authenticate is not None:
            refused = await self.authenticate(scope)
            if refused is not None:
                await refused(scope, receive, send)
                return
        if length is not None and (not length.isdigit() or int(length) > limit):
            await too_large()(scope, receive, send)
            return
        held = _Held(self.memory, upload=upload)
        try:
            if not held.take(int(length or 0)):
                await _answer(self._no_memory(), scope, receive, send)
                return
            if upload and _is_multipart(scope):
                counted = self._counted(receive, limit, held, declared=length is not None)
                await self.app(scope, counted, send)
                return
            chunks: list[bytes] = []
            size = 0
            while True:
                message = await receive()
                if message["type"] != "http.request":
                    return  # the client went away
                chunk = message.get("body", b"")
                size += len(chunk)
                if size > limit:
                    await too_large()(scope, receive, send)
                    return
                if length is None and not held.take(len(chunk)):
                    await _answer(self._no_memory(), scope, receive, send)
                    return
                chunks.append(chunk)
                if not message.get("more_body", False):
                    break
            body = b"".join(chunks)
            del chunks
            problem = json_body_problem(body, self.max_json_depth) if _is_json(scope) else None
            if problem is not None:
                response = error_response(400, f"invalid request body: {problem}", field="body")
                await response(scope, receive, send)
                return
            await self.app(scope, replay_body(body, receive), send)
        finally:
            held.release()

    def _counted(self, receive: Receive, limit: int, held: _Held, *, declared: bool) -> Receive:
        """``receive`` for a body streamed on to the app: its bytes counted against ``limit``
        (413) and, unless its whole ``Content-Length`` is ``held`` already, against the
        memory bound (503), each raised as an :class:`ApiError` the app answers."""
        size = 0

        async def counted() -> Message:
            nonlocal size
            message = await receive()
            if message["type"] == "http.request":
                chunk = message.get("body", b"")
                size += len(chunk)
                if size > limit:
                    raise ApiError(
                        413,
                        f"the request body is larger than {_human(limit)} (the master's "
                        "max_upload_bytes setting)",
                        field="body",
                    )
                if not declared and not held.take(len(chunk)):
                    raise self._no_memory()
            return message

        return counted


async def _answer(error: ApiError, scope: Scope, receive: Receive, send: Send) -> None:
    response = error_response(
        error.status_code, error.message, field=error.field, headers=error.headers
    )
    await response(scope, receive, send)


async def read_body(receive: Receive) -> bytes:
    """A request's whole body from its ``receive`` (what came before a disconnect, if any)."""
    chunks = []
    while True:
        message = await receive()
        if message["type"] != "http.request":
            break
        chunks.append(message.get("body", b""))
        if not message.get("more_body", False):
            break
    return b"".join(chunks)


def replay_body(body: bytes, receive: Receive) -> Receive:
    """A ``receive`` that gives ``body`` in one message, then defers to ``receive``."""
    sent = False

    async def replay() -> Message:
        nonlocal sent
        if not sent:
            sent = True
            return {"type": "http.request", "body": body, "more_body": False}
        return await receive()

    return replay
