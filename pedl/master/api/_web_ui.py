"""Serving the web UI: the built single-page app (``pedl/master/ui_dist/``, made by ``make ui``
from ``ui/``) at ``/``, ``index.html`` for every path that is not a file of the build (the
app routes in the browser), and never for ``/api/...``, ``/docs`` or ``/openapi.json``."""

from __future__ import annotations

from pathlib import Path

from starlette.requests import Request
from starlette.responses import FileResponse, HTMLResponse, Response
from starlette.routing import Match, Route
from starlette.types import Scope

UI_DIST = Path(__file__).resolve().parent.parent / "ui_dist"
"""Where ``make ui`` puts the built UI (packaged into the wheel; not committed)."""

NOT_BUILT = """<!doctype html>
<html lang="en"><head><meta charset="utf-8"><title>PEDL master</title></head>
<body style="font-family: sans-serif; max-width: 40em; margin: 3em auto">
<h1>PEDL master</h1>
<p>The web UI is not built. Build it from a checkout of PEDL with <code>make ui</code>
(Node and npm; it writes <code>pedl/master/ui_dist/</code>), then reload this page.</p>
<p>The REST API works without it: <a href="/docs">/docs</a>,
<a href="/openapi.json">/openapi.json</a>.</p>
</body></html>
"""

_IMMUTABLE = {"Cache-Control": "public, max-age=31536000, immutable"}
_REVALIDATE = {"Cache-Control": "no-cache"}


class _WebUIRoute(Route):
    """``GET /{path}`` for every path outside ``/api``: an unknown API path stays a JSON 404
    (or 405) of the API instead of becoming the app's page."""

    def matches(self, scope: Scope) -> tuple[Match, Scope]:
        path = scope.get("path", "")
        if scope["type"] == "http" and (path == "/api" or path.startswith("/api/")):
            return Match.NONE, {}
        return super().matches(scope)


def web_ui_route(directory: Path) -> Route:
    """The route that serves the UI built into ``directory`` (add it after every other)."""
    root = directory.resolve()

    async def web_ui(request: Request) -> Response:
        index = root / "index.html"
        if not index.is_file():
            return HTMLResponse(NOT_BUILT)
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
                    return FileResponse(candidate, headers=headers)
            if nested:
                return Response("not found", status_code=404, media_type="text/plain")
        return FileResponse(index, headers=_REVALIDATE)

    return _WebUIRoute("/{path:path}", web_ui, methods=["GET", "HEAD"], include_in_schema=False)
