"""Limits on what one request may carry, checked before any route (fast paths included) sees it.

:class:`RequestLimits` is an ASGI layer in front of the master's app (inside
:class:`~._app.InFlightLimit`, in front of the metric-report fast path and the read
forwarding). It answers in the standard error shape, naming the limit and its setting:

- 413 when the body is larger than ``max_request_bytes`` (``max_upload_bytes`` for
  ``POST /experiments``, which carries the model definition): refused on its
  ``Content-Length`` at once, or as soon as the bytes streamed in pass the limit, never read
  whole;
- 400 when a JSON body nests arrays and objects deeper than ``max_json_depth`` (found by a
  scan of the raw bytes, before any parser recurses), or holds a lone UTF-16 surrogate
  (``"\\udcff"``, which no database can store as text);
- 400 when the URL carries a NUL character (``%00``).

A body that passes is handed on whole (one ``http.request`` message).
"""

from __future__ import annotations

import re

from starlette.types import ASGIApp, Message, Receive, Scope, Send

from pedl.master.api._errors import error_response

_BODILESS = frozenset({"GET", "HEAD", "DELETE", "OPTIONS"})

# A pair of escaped surrogates (high then low) is one character; any other escaped or raw
# (UTF-8-encoded, which json.loads decodes with surrogatepass) surrogate stands alone.
_SURROGATE_PAIR = re.compile(rb"\\u[dD][89abAB][0-9a-fA-F]{2}\\u[dD][c-fC-F][0-9a-fA-F]{2}")
_ESCAPED_SURROGATE = re.compile(rb"\\u[dD][89a-fA-F][0-9a-fA-F]{2}")
_RAW_SURROGATE = re.compile(rb"\xed[\xa0-\xbf]")
_STRING = re.compile(rb'"[^"]*"')
_NOT_BRACKET = bytes(b for b in range(256) if b not in b"[]{}")
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
    text = body.replace(b"\\\\", b"")  # an escaped backslash escapes nothing after it
    if b"\\u" in text and _ESCAPED_SURROGATE.search(_SURROGATE_PAIR.sub(b"", text)):
        return "a string holds a lone UTF-16 surrogate escape (\\ud800-\\udfff), which is not text"
    if b"\xed" in text and _RAW_SURROGATE.search(text):
        return "a string holds a UTF-8-encoded surrogate (\\ud800-\\udfff), which is not text"
    brackets = _STRING.sub(b"", text.replace(b'\\"', b"")).translate(None, _NOT_BRACKET)
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


class RequestLimits:
    """ASGI layer: the size, JSON depth and text limits of every HTTP request (see the
    module's docstring). ``upload_path`` is the one route (``POST``) allowed ``max_upload``
    bytes; every other gets ``max_body``."""

    def __init__(
        self,
        app: ASGIApp,
        *,
        max_body: int,
        max_upload: int,
        upload_path: str,
        max_json_depth: int,
    ) -> None:
        self.app = app
        self.max_body = max_body
        self.max_upload = max_upload
        self.upload_path = upload_path
        self.max_json_depth = max_json_depth

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
        too_large = error_response(
            413,
            f"the request body is larger than {_human(limit)} (the master's {setting} setting)",
            field="body",
        )
        if length is not None and (not length.isdigit() or int(length) > limit):
            await too_large(scope, receive, send)
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
                await too_large(scope, receive, send)
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
