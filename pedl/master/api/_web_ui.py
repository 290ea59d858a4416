"""Serving the web UI: the built single-page app (``pedl/master/ui_dist/``, made by ``make ui``
from ``ui/``) at ``/``, ``index.html`` for every path that is not a file of the build (the
app routes in the browser), and never for ``/api/...``, ``/docs`` or ``/openapi.json``.

Every response of the UI carries a Content-Security-Policy that lets the page run only the
build's own files and the inline ``<script>``/``<style>`` elements of the ``index.html`` it
serves (by their SHA-256, computed from that file), load nothing from another origin, be
framed by no one, and post forms nowhere else; and ``X-Content-Type-Options: nosniff``. So
markup that reached the page from user data (an experiment's name, a log line) could not run
even where the UI wrote it as HTML, which it does not (tests/ui/test_injection.py)."""

from __future__ import annotations

import base64
import hashlib
import re
from pathlib import Path

from starlette.requests import Request
from starlette.responses import FileResponse, HTMLResponse, Response
from starlette.routing import Match, Route
from starlette.types import Scope

UI_DIST = Path(__file__).resolve().parent.parent / "ui_dist"
"""Where ``make ui`` puts the built UI (packaged into the wheel; not committed)."""

NOT_BUILT = """<!doctype html>
<html lang="en"><head><meta charset="utf-8"><title>PEDL master</title>
<style>body { font-family: sans-serif; max-width: 40em; margin: 3em auto }</style></head>
<body>
<h1>PEDL master</h1>
<p>The web UI is not built. Build it from a checkout of PEDL with <code>make ui</code>
(Node and npm; it writes <code>pedl/master/ui_dist/</code>), then reload this page.</p>
<p>The REST API works without it: <a href="/docs">/docs</a>,
<a href="/openapi.json">/openapi.json</a>.</p>
</body></html>
"""

_IMMUTABLE = {"Cache-Control": "public, max-age=31536000, immutable"}
_REVALIDATE = {"Cache-Control": "no-cache"}

_INLINE_SCRIPT = re.compile(rb"<script(?![^>]*\bsrc\s*=)[^>]*>(.*?)</script\s*>", re.S | re.I)
_INLINE_STYLE = re.compile(rb"<style[^>]*>(.*?)</style\s*>", re.S | re.I)


def _hashes(pattern: re.Pattern[bytes], html: bytes) -> str:
    # The browser hashes an element's text as parsed: HTML turns CRLF and CR into LF.
    texts = (m.replace(b"\r\n", b"\n").replace(b"\r", b"\n") for m in pattern.findall(html))
    digests = (base64.b64encode(hashlib.sha256(t).digest()).decode() for t in texts)
    return "".join(f" 'sha256-{d}'" for d in dict.fromkeys(digests))


def content_security_policy(html: bytes = b"") -> str:
    """The policy of a UI response: ``html``'s inline scripts and styles are allowed by their
    hashes (none for a response that is not the page). The UI writes element styles through
    the CSSOM (``element.style``), which style-src does not govern; the favicon is a data:
    URL and checkpoint downloads are blob: URLs."""
    return "; ".join(
        (
            "default-src 'self'",
            f"script-src 'self'{_hashes(_INLINE_SCRIPT, html)}",
            f"style-src 'self'{_hashes(_INLINE_STYLE, html)}",
            "img-src 'self' data: blob:",
            "connect-src 'self'",
            "object-src 'none'",
            "base-uri 'none'",
            "form-action 'self'",
            "frame-ancestors 'none'",
        )
    )


def security_headers(html: bytes = b"") -> dict[str, str]:
    """The headers every UI response carries (``html``: the page it is, if one)."""
    return {
        "Content-Security-Policy": content_security_policy(html),
        "X-Content-Type-Options": "nosniff",
    }


class _PageHeaders:
    """The security headers of the built ``index.html``, recomputed when the file changes
    (``make ui`` while the master runs)."""

    def __init__(self) -> None:
        self._key: tuple[int, int] | None = None
        self._headers: dict[str, str] = {}

    def of(self, index: Path) -> dict[str, str]:
        stat = index.stat()
        key = (stat.st_mtime_ns, stat.st_size)
        if key != self._key:
            self._headers, self._key = security_headers(index.read_bytes()), key
        return self._headers


class _WebUIRoute(Route):
    """``GET /{path}`` for every path outside ``/api``: an unknown API path stays a JSON 404
    (or 405) of the API instead of becoming the app's page."""

    def matches(self, scope: Scope) -> tuple[Match, Scope]:
        path = scope.get("path", "")
        if scope["type"] == "http" and (path == "/api" or path.startswith("/api/")):
            return Match.NONE, {}
        return super().matches(scope)


ACCOUNTS_COOKIE = "pedl_accounts"
"""Set with the page: ``on`` when the master has accounts (the page shows its sign-in form
without a session, asking nothing first, so that no 401 reaches the browser's console),
``off`` for a ``--no-auth`` master. A session cookie, readable by the page's script."""


def _accounts_cookie(request: Request) -> dict[str, str]:
    settings = getattr(request.app.state, "settings", None)
    accounts = "off" if settings is not None and not getattr(settings, "auth", True) else "on"
    return {"Set-Cookie": f"{ACCOUNTS_COOKIE}={accounts}; Path=/; SameSite=Strict"}


def web_ui_route(directory: Path) -> Route:
    """The route that serves the UI built into ``directory`` (add it after every other)."""
    root = directory.resolve()
    page_headers = _PageHeaders()
    not_built_headers = security_headers(NOT_BUILT.encode())
    file_headers = security_headers()

    async def web_ui(request: Request) -> Response:
        index = root / "index.html"
        if not index.is_file():
            return HTMLResponse(NOT_BUILT, headers=not_built_headers)
        relative = request.path_params.get("path", "")
        if relative:
            # An asset asked for relative to an app path (/experiments/assets/x.js with a
            # relative base) is the same asset.
            _, nested, asset = relative.rpartition("assets/")
            for name in (relative, f"assets/{asset}") if nested else (relative,):
                candidate = (root / name).resolve()
                if candidate.is_relative_to(root) and candidate.is_file():
                    hashed = candidate.parent == root / "assets"  # Vite's content-hashed names
                    headers = _IMMUTABLE if hashed else _REVALIDATE
                    if candidate == index:
                        page = {**headers, **page_headers.of(index), **_accounts_cookie(request)}
                        return FileResponse(candidate, headers=page)
                    return FileResponse(candidate, headers={**headers, **file_headers})
            if nested:
                return Response(
                    "not found", status_code=404, media_type="text/plain", headers=file_headers
                )
        page = {**_REVALIDATE, **page_headers.of(index), **_accounts_cookie(request)}
        return FileResponse(index, headers=page)

    return _WebUIRoute("/{path:path}", web_ui, methods=["GET", "HEAD"], include_in_schema=False)
