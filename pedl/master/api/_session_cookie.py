"""The web UI's sign-in as cookies: the session token in an HttpOnly cookie, beside the
bearer token of the CLI and the SDK, with a CSRF check for the requests that change state.

Signing in (``POST /auth/login``) also sets two cookies, valid as long as the token:

- :data:`SESSION_COOKIE`: the session token itself; ``HttpOnly`` (page scripts cannot read
  it), ``SameSite=Strict`` (a browser sends it only with requests from the master's own
  pages), ``Path=/``, ``Secure`` when the request came over HTTPS (the scheme, or a proxy's
  ``X-Forwarded-Proto: https``).
- :data:`CSRF_COOKIE`: :func:`csrf_token` of the session token, readable by page scripts
  (not ``HttpOnly``) so that the web UI echoes it in the :data:`CSRF_HEADER` header of
  every request that changes state (double submit). A page of another site can neither read
  it nor set that header on a request to the master.

:class:`SessionCookies` turns a request's session cookie into the ``Authorization: Bearer``
header the routes already check, so every later step (the caller's check before the body,
the read processes, the token cache, a revocation) is the bearer token's. A request that
carries an ``Authorization`` header is left as it is (the cookies are ignored: the CLI and
the SDK). A request that changes state (any method but GET, HEAD and OPTIONS) signed in by
the cookie alone must carry the CSRF header equal to :func:`csrf_token` of its cookie: 403
otherwise, before its body is read; but a cookie that signs no one in (forged, expired,
revoked) is answered 401 first, as the same token in a header would be. Signing out
(``POST /auth/logout``) revokes the token and clears both cookies.
"""

from __future__ import annotations

import hashlib
import hmac
from collections.abc import Awaitable, Callable
from datetime import datetime

from starlette.requests import cookie_parser
from starlette.responses import Response
from starlette.types import ASGIApp, Receive, Scope, Send

from pedl.master.api._errors import error_response

SESSION_COOKIE = "pedl_session"
CSRF_COOKIE = "pedl_csrf"
CSRF_HEADER = "X-PEDL-CSRF"

SAFE_METHODS = frozenset({"GET", "HEAD", "OPTIONS"})
"""The methods that change no state: no CSRF header needed."""

UserCheck = Callable[[str, Scope], Awaitable[Response | None]]
"""Checks a user's session token: the answer refusing it (401; 503 when the database cannot
be asked), or ``None`` when it signs a user in (:meth:`~._auth.BodyAuth.user_refusal`)."""
_CSRF_HEADER = CSRF_HEADER.lower().encode()


def csrf_token(session_token: str) -> str:
    """The CSRF token of a session: a one-way function of its token (so it proves nothing
    but that the page could read the master's cookies, and reveals nothing of the token)."""
    return hashlib.sha256(b"pedl-csrf:" + session_token.encode()).hexdigest()


def _is_https(scope: Scope) -> bool:
    if scope.get("scheme") == "https":
        return True
    for name, value in scope["headers"]:
        if name == b"x-forwarded-proto":
            return value.split(b",")[0].strip().lower() == b"https"
    return False


def set_session_cookies(
    response: Response, scope: Scope, token: str, expires_at: datetime, now: datetime
) -> None:
    """Put the session's two cookies on ``response`` (the answer to a sign-in)."""
    max_age = max(0, int((expires_at - now).total_seconds()))
    secure = _is_https(scope)
    for name, value, http_only in (
        (SESSION_COOKIE, token, True),
        (CSRF_COOKIE, csrf_token(token), False),
    ):
        response.set_cookie(
            name,
            value,
            max_age=max_age,
            expires=expires_at,
            path="/",
            secure=secure,
            httponly=http_only,
            samesite="strict",
        )


def clear_session_cookies(response: Response, scope: Scope) -> None:
    """Make the browser drop the session's cookies (the answer to a sign-out)."""
    secure = _is_https(scope)
    for name, http_only in ((SESSION_COOKIE, True), (CSRF_COOKIE, False)):
        response.delete_cookie(name, path="/", secure=secure, httponly=http_only, samesite="strict")


def csrf_echoed(token: str, echoed: str | None) -> bool:
    """Whether ``echoed`` (the request's :data:`CSRF_HEADER`) is the CSRF token of the
    session ``token``."""
    return hmac.compare_digest((echoed or "").encode(), csrf_token(token).encode())


def csrf_refusal() -> Response:
    """The 403 of a cookie-signed request that changes state without the CSRF header."""
    return error_response(
        403,
        f"a request that changes state, signed in by the session cookie, needs the "
        f"{CSRF_HEADER} header (the value of the {CSRF_COOKIE} cookie): the web UI "
        f"sends it; another site's page cannot",
        field=CSRF_HEADER,
    )


class SessionCookies:
    """ASGI middleware: a request under ``prefix`` (the API) without an ``Authorization``
    header but with the :data:`SESSION_COOKIE` gets ``Authorization: Bearer <cookie>``; one
    that changes state must carry :data:`CSRF_HEADER` (403 otherwise, without reading its
    body), unless ``check_user`` refuses its cookie (401: a forged or ended session learns
    nothing more). ``public`` paths (signing in, the health check) are passed on untouched."""

    def __init__(
        self,
        app: ASGIApp,
        *,
        prefix: str,
        public: frozenset[str],
        check_user: UserCheck | None = None,
    ) -> None:
        self.app = app
        self.prefix = prefix + "/"
        self.public = public
        self.check_user = check_user

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if (
            scope["type"] != "http"
            or not scope["path"].startswith(self.prefix)
            or scope["path"] in self.public
        ):
            await self.app(scope, receive, send)
            return
        cookies = None
        echoed = None
        for name, value in scope["headers"]:
            if name == b"authorization":
                await self.app(scope, receive, send)  # a bearer token wins; no cookie used
                return
            if name == b"cookie":
                cookies = value.decode("latin-1")
            elif name == _CSRF_HEADER:
                echoed = value.decode("latin-1")
        token = cookie_parser(cookies).get(SESSION_COOKIE) if cookies else None
        if not token:
            await self.app(scope, receive, send)
            return
        if scope["method"] not in SAFE_METHODS and not csrf_echoed(token, echoed):
            refused = None if self.check_user is None else await self.check_user(token, scope)
            await (refused or csrf_refusal())(scope, receive, send)
            return
        headers = [
            *scope["headers"],
            (b"authorization", b"Bearer " + token.encode("latin-1", "replace")),
        ]
        await self.app({**scope, "headers": headers}, receive, send)
