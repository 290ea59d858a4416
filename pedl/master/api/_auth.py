"""Who is calling: signed-in users and trials, each with a bearer token of their own.

Two kinds of token, never interchangeable:

- A **user's session token** (``pedl-user.<random>``, from ``POST /auth/login``): every route
  but the public ones (:data:`PUBLIC_PATHS`, the web UI's files) depends on
  :data:`CurrentUser` or :func:`require_user`: 401 without a token, or with one that is
  unknown, expired, revoked (logout) or whose account was deactivated. With the master's
  ``auth`` setting off (``pedl master --no-auth``, loopback only) every caller is the
  administrator and no token is needed.
- A **trial's token** (issued by the master to one trial process): the trial's own writes
  depend on :data:`TrialAuth` (401 without a valid trial token, 403 with another trial's). A
  route that checks the token later itself (the metrics route, in the metric writer's
  transaction) depends on :data:`BearerToken` and answers a mismatch with :func:`token_error`.
  A user's token is no trial token, and a trial's token is no user token (401 either way);
  the one read a trial needs besides its own routes, its experiment's model definition,
  depends on :data:`ExperimentReader` (a user, or a trial of that experiment).

The web UI sends its session token in an HttpOnly cookie rather than a header:
:class:`~._session_cookie.SessionCookies` turns the cookie into the same bearer token (after
a CSRF check for requests that change state) before anything here sees the request.

Every request with a body is checked first by :class:`BodyAuth`, on its headers alone, before
a byte of the body is read and before its size is looked at (the same 401s and 403s as the
dependencies above, which check again): an anonymous or forged request costs no memory and
no parsing, and learns nothing of the route's limits (401, not 413).

Looking a user token up costs a database read; to keep the dashboards' polling cheap, each
process remembers a valid token for ``token_cache_seconds`` (never past its expiry). A
logout, a deactivation or a password change forgets the tokens in the master's own memory at
once. A read process may still trust a revoked token for up to ``token_cache_seconds``, so
for that long the master serves itself the reads that carry it (all reads, after a
deactivation or a password change, which revoke tokens it does not know): a revocation takes
effect everywhere as soon as its request is answered.

Experiments (and their trials and checkpoints) belong to the user who created them: writes
check :func:`require_owner` (403 unless the owner or an administrator).
"""

from __future__ import annotations

import logging
import re
import time
from collections.abc import Awaitable, Iterable
from dataclasses import dataclass
from datetime import UTC, datetime
from enum import Enum
from typing import Annotated, Any

import anyio.to_thread
from fastapi import Depends, Request
from fastapi.routing import APIRoute
from fastapi.security import HTTPAuthorizationCredentials, HTTPBearer
from fastapi.security.utils import get_authorization_scheme_param
from starlette.responses import Response
from starlette.routing import compile_path
from starlette.types import Scope

from pedl.db import Database
from pedl.db import trials as trials_repo
from pedl.db import users as users_repo
from pedl.master._settings import MasterSettings
from pedl.master.api._deps import MAX_INT_ID, DatabaseDep, ExperimentId, TrialId
from pedl.master.api._errors import ApiError, error_response, is_transient_db_error
from pedl.master.api._schemas import ErrorResponse

logger = logging.getLogger("pedl.master.api")

DEFAULT_USER = users_repo.ADMIN
USER_TOKEN_PREFIX = users_repo.TOKEN_PREFIX

PUBLIC_PATHS = frozenset({"/api/v1/health", "/api/v1/auth/login", "/docs", "/openapi.json"})
"""The routes that answer without any token (besides the web UI's own files at ``/``): the
liveness check, signing in, and the API's documentation (no data)."""

_bearer = HTTPBearer(
    auto_error=False,
    scheme_name="TrialToken",
    description="The token the master issued to a trial; valid only for that trial's routes.",
)
_user_bearer = HTTPBearer(
    auto_error=False,
    scheme_name="UserToken",
    description="A user's session token, from POST /api/v1/auth/login.",
)
_CHALLENGE = {"WWW-Authenticate": "Bearer"}

USER_AUTH_RESPONSES: dict[int | str, dict[str, Any]] = {
    401: {
        "model": ErrorResponse,
        "description": "Not signed in (no token, or one that is unknown, expired or revoked)",
    },
}
"""The ``responses=`` documentation of the routes that need a signed-in user."""

OWNER_RESPONSES: dict[int | str, dict[str, Any]] = {
    **USER_AUTH_RESPONSES,
    403: {"model": ErrorResponse, "description": "Only the owner or an administrator may"},
}
"""... and of those that only the owner of the resource or an administrator may use."""

SIGN_IN_HINT = "sign in: POST /api/v1/auth/login, `pedl user login`, or PEDL_USER and PEDL_PASSWORD"


@dataclass(frozen=True)
class TrialPrincipal:
    """A caller proven to be the trial ``trial_id``."""

    trial_id: int


@dataclass(frozen=True)
class UserPrincipal:
    """A signed-in user (a person, the CLI, the SDK, the web UI). ``token`` is the session
    token the request carried (``None`` with auth off)."""

    username: str
    admin: bool = False
    token: str | None = None


NO_AUTH_USER = UserPrincipal(username=DEFAULT_USER, admin=True)
"""Every caller of a master whose ``auth`` setting is off."""


def bearer_token(
    credentials: Annotated[HTTPAuthorizationCredentials | None, Depends(_bearer)],
) -> str:
    """The request's bearer token, not yet checked (401 when there is none)."""
    if credentials is None:
        raise ApiError(
            401, "missing bearer token of the trial", field="Authorization", headers=_CHALLENGE
        )
    return credentials.credentials


def token_error(owner: int | None, trial_id: int) -> ApiError:
    """The error for a token that does not belong to ``trial_id``: 401 when it belongs to no
    trial (``owner`` is ``None``), 403 when it is another trial's."""
    if owner is None:
        return ApiError(401, "invalid trial token", field="Authorization", headers=_CHALLENGE)
    return ApiError(403, f"this token is not valid for trial {trial_id}", field="Authorization")


BearerToken = Annotated[str, Depends(bearer_token)]


def require_trial(trial_id: TrialId, database: DatabaseDep, token: BearerToken) -> TrialPrincipal:
    """Check the bearer token against the trial in the path."""
    with database.session() as session:
        owner = trials_repo.trial_id_for_token(session, token)
    if owner != trial_id:
        raise token_error(owner, trial_id)
    return TrialPrincipal(trial_id=trial_id)


class TokenCache:
    """The user tokens this process found valid lately: token -> (user, valid until, on
    :func:`time.monotonic`'s clock), and those it revoked lately, which another process of
    the master may still trust (:meth:`revoked_lately`). No lock: each operation is one dict
    operation or assignment, atomic under the GIL (the event loop reads and fills it,
    request handlers forget tokens)."""

    MAX_ENTRIES = 10_000

    def __init__(self, seconds: float) -> None:
        self.seconds = seconds
        self._entries: dict[str, tuple[UserPrincipal, float]] = {}
        self._revoked: dict[str, float] = {}
        self._all_revoked_until = 0.0
        self._trials: dict[str, tuple[int, float]] = {}

    def trial(self, token: str) -> int | None:
        """The trial that owned ``token`` when it was looked up, within the last ``seconds``
        (``None``: not known). Only :class:`BodyAuth` trusts it, to let a body be read: the
        routes check a trial's token again themselves, so a token revoked meanwhile is
        still refused."""
        entry = self._trials.get(token)
        if entry is None:
            return None
        if entry[1] <= time.monotonic():
            del self._trials[token]
            return None
        return entry[0]

    def put_trial(self, token: str, trial_id: int) -> None:
        if self.seconds <= 0:
            return
        if len(self._trials) >= self.MAX_ENTRIES:
            self._trials.clear()
        self._trials[token] = (trial_id, time.monotonic() + self.seconds)

    def get(self, token: str) -> UserPrincipal | None:
        entry = self._entries.get(token)
        if entry is None:
            return None
        if entry[1] <= time.monotonic():
            del self._entries[token]
            return None
        return entry[0]

    def put(self, token: str, user: UserPrincipal, expires_in: float) -> None:
        if self.seconds <= 0:
            return
        if len(self._entries) >= self.MAX_ENTRIES:
            self._entries.clear()
        self._entries[token] = (user, time.monotonic() + min(self.seconds, expires_in))

    def forget(self, token: str | None = None) -> None:
        """Forget ``token``, or every token (``None``), which was revoked: for the next
        ``seconds``, :meth:`revoked_lately` says so of it (of every token)."""
        until = time.monotonic() + self.seconds
        if token is None:
            self._entries.clear()
            self._all_revoked_until = until
            return
        self._entries.pop(token, None)
        if len(self._revoked) >= self.MAX_ENTRIES:
            self._revoked = {t: u for t, u in self._revoked.items() if u > time.monotonic()}
            if len(self._revoked) >= self.MAX_ENTRIES:
                self._all_revoked_until = until  # too many to tell apart: all of them
        self._revoked[token] = until

    def revoked_lately(self, token: str | None) -> bool:
        """Whether ``token`` (``None``: a request without one) may have been revoked within
        the last ``seconds``, so that another process's cache may still hold it as valid."""
        now = time.monotonic()
        if now < self._all_revoked_until:
            return True
        if token is None:
            return False
        until = self._revoked.get(token)
        return until is not None and now < until


def token_cache(request: Request) -> TokenCache:
    """The app's :class:`TokenCache` (``create_app`` makes it)."""
    cache = request.app.state.token_cache
    assert isinstance(cache, TokenCache)
    return cache


def _settings(request: Request) -> MasterSettings:
    settings = request.app.state.settings
    assert isinstance(settings, MasterSettings)
    return settings


def _not_signed_in(message: str) -> ApiError:
    return ApiError(401, f"{message}; {SIGN_IN_HINT}", field="Authorization", headers=_CHALLENGE)


async def current_user(
    request: Request,
    credentials: Annotated[HTTPAuthorizationCredentials | None, Depends(_user_bearer)],
) -> UserPrincipal:
    """The signed-in user whose session token the request carries (401 otherwise); every
    caller is the administrator when the master's ``auth`` setting is off. Answered on the
    event loop when the token is in the :class:`TokenCache`, else with one database read on
    a worker thread."""
    if not _settings(request).auth:
        return NO_AUTH_USER
    if credentials is None:
        raise _not_signed_in("not signed in")
    token = credentials.credentials
    if not token.startswith(USER_TOKEN_PREFIX):
        raise _not_signed_in("this is not a user's session token")
    database = request.app.state.database
    assert isinstance(database, Database)
    user = await signed_in_user(token, database, token_cache(request))
    if user is None:
        raise _not_signed_in("the session token is unknown, expired or revoked")
    return user


async def signed_in_user(token: str, database: Database, cache: TokenCache) -> UserPrincipal | None:
    """Who the session ``token`` signs in (``None``: unknown, expired, revoked, or of a
    deactivated account): from ``cache``, else one database read on a worker thread, whose
    answer ``cache`` keeps."""
    user = cache.get(token)
    if user is not None:
        return user

    def look_up() -> users_repo.SignedIn | None:
        with database.session() as session:
            return users_repo.signed_in(session, token)

    found = await anyio.to_thread.run_sync(look_up)
    if found is None:
        return None
    user = UserPrincipal(username=found.username, admin=found.admin, token=token)
    cache.put(token, user, (found.expires_at - datetime.now(UTC)).total_seconds())
    return user


async def trial_of_token(token: str, database: Database, cache: TokenCache) -> int | None:
    """The trial that owns ``token`` (``None``: none does): from ``cache``, else one
    database read on a worker thread, whose answer ``cache`` keeps. A user's session token
    is no trial's (answered without a read)."""
    if token.startswith(USER_TOKEN_PREFIX):
        return None
    trial_id = cache.trial(token)
    if trial_id is not None:
        return trial_id

    def look_up() -> int | None:
        with database.session() as session:
            return trials_repo.trial_id_for_token(session, token)

    trial_id = await anyio.to_thread.run_sync(look_up)
    if trial_id is not None:
        cache.put_trial(token, trial_id)
    return trial_id


CurrentUser = Annotated[UserPrincipal, Depends(current_user)]
TrialAuth = Annotated[TrialPrincipal, Depends(require_trial)]

require_user = Depends(current_user)
"""For a router's or route's ``dependencies=[require_user]``: a signed-in user only."""


def require_admin(user: CurrentUser) -> UserPrincipal:
    """The signed-in user, who must be an administrator (403 otherwise)."""
    if not user.admin:
        raise ApiError(403, "only an administrator may do this", field="Authorization")
    return user


AdminUser = Annotated[UserPrincipal, Depends(require_admin)]


def require_owner(user: UserPrincipal, owner: str, what: str) -> None:
    """403 unless ``user`` is ``owner`` or an administrator; ``what`` names the resource
    (e.g. ``"experiment 3"``)."""
    if not user.admin and user.username != owner:
        raise ApiError(
            403,
            f"{what} belongs to {owner!r}: only its owner or an administrator may change it",
            field="Authorization",
        )


async def experiment_reader(
    experiment_id: ExperimentId,
    request: Request,
    credentials: Annotated[HTTPAuthorizationCredentials | None, Depends(_user_bearer)],
) -> UserPrincipal | TrialPrincipal:
    """A signed-in user (as :func:`current_user`), or a trial of experiment
    ``experiment_id`` (whose process fetches the experiment's model definition with its own
    token): 401 with neither token, 403 with the token of another experiment's trial."""
    token = None if credentials is None else credentials.credentials
    if token is None or token.startswith(USER_TOKEN_PREFIX) or not _settings(request).auth:
        return await current_user(request, credentials)
    database = request.app.state.database
    assert isinstance(database, Database)

    def look_up() -> tuple[int, int] | None:
        with database.session() as session:
            trial_id = trials_repo.trial_id_for_token(session, token)
            if trial_id is None:
                return None
            return trial_id, trials_repo.get_trial(session, trial_id).experiment_id

    found = await anyio.to_thread.run_sync(look_up)
    if found is None:
        raise _not_signed_in("the token is neither a user's session token nor a trial's")
    trial_id, trial_experiment = found
    if trial_experiment != experiment_id:
        raise ApiError(
            403,
            f"the token of trial {trial_id} is not valid for experiment {experiment_id}",
            field="Authorization",
        )
    return TrialPrincipal(trial_id=trial_id)


ExperimentReader = Annotated[UserPrincipal | TrialPrincipal, Depends(experiment_reader)]


class _Needs(Enum):
    """What a route's caller must prove (see :class:`BodyAuth`)."""

    USER = "user"
    TRIAL = "trial"
    USER_OR_TRIAL = "user or trial"


def _needs(route: APIRoute) -> _Needs:
    """What ``route``'s dependencies ask of its caller: a trial's token (:data:`TrialAuth`,
    :data:`BearerToken`), a user or a trial (:data:`ExperimentReader`), else a user."""
    calls: set[int] = set()
    stack = [route.dependant]
    while stack:
        dependant = stack.pop()
        calls.add(id(dependant.call))
        stack.extend(dependant.dependencies)
    if id(experiment_reader) in calls:
        return _Needs.USER_OR_TRIAL
    if id(_bearer) in calls and "{trial_id}" in route.path:
        return _Needs.TRIAL
    return _Needs.USER


class BodyAuth:
    """Who may send a request body, checked on its headers alone, before a byte of the body
    is read (:class:`~._limits.RequestLimits` calls it first): the same 401s and 403s, with
    the same messages, as the route's own dependencies would answer after reading and
    parsing it, so that an anonymous or forged request costs no memory and no parsing.

    ``routes`` are the app's (their paths under ``prefix``); what each needs comes from its
    dependencies (:func:`_needs`):
    a signed-in user (skipped when the master's ``auth`` setting is off), the token of the
    trial in its path (another trial's: 403), or either (a trial's model definition). The
    public paths (:data:`PUBLIC_PATHS`, everything outside ``/api/``: the web UI, the
    documentation) need nothing; an unknown ``/api/`` path needs a user. Tokens are looked
    up as the routes look them up, through the :class:`TokenCache` (a database read on a
    worker thread when not cached, never on the event loop). Being an ASGI helper outside
    FastAPI's error handling, it answers a database that is busy or down with 503 itself,
    anything else unexpected with 500 (logged), in the standard error shape."""

    def __init__(
        self,
        routes: Iterable[APIRoute],
        *,
        prefix: str,
        database: Database,
        tokens: TokenCache,
        settings: MasterSettings,
    ) -> None:
        self.database = database
        self.tokens = tokens
        self.settings = settings
        # The routes by their path's first segment after /api/v1 ("trials", ...): a request
        # is matched against a few of them only.
        self._routes: dict[str, list[tuple[re.Pattern[str], set[str], _Needs]]] = {}
        for route in routes:
            path = prefix + route.path
            if path not in PUBLIC_PATHS:
                entry = (compile_path(path)[0], set(route.methods or ()), _needs(route))
                self._routes.setdefault(_segment(path), []).append(entry)

    async def __call__(self, scope: Scope) -> Response | None:
        """The answer refusing this request (401, 403; 503 when the database cannot be
        asked), or ``None`` to go on and read its body."""
        path: str = scope["path"]
        if path in PUBLIC_PATHS or not path.startswith("/api/"):
            return None
        return await self._answer(self._check(scope, path), scope)

    async def user_refusal(self, token: str, scope: Scope) -> Response | None:
        """The 401 for a user's session ``token`` (e.g. a cookie's) that signs no one in
        (unknown, forged, expired, revoked, of another kind; 503 when the database cannot be
        asked), or ``None`` when it signs a user in, or the master's ``auth`` is off."""
        return await self._answer(self._check_user(token), scope)

    async def _answer(self, check: Awaitable[None], scope: Scope) -> Response | None:
        path: str = scope["path"]
        try:
            await check
        except ApiError as err:
            return error_response(
                err.status_code, err.message, field=err.field, headers=err.headers
            )
        except Exception as err:
            if not is_transient_db_error(err):
                logger.exception("unhandled error", exc_info=err)
                return error_response(500, "internal server error")
            logger.warning("shedding %s %s: %s", scope["method"], path, err)
            return error_response(
                503,
                "the database is busy or unavailable; retry later",
                retry_after_s=self.settings.retry_after_seconds,
            )
        return None

    async def _check(self, scope: Scope, path: str) -> None:
        needs, trial_id = _Needs.USER, None
        for pattern, methods, route_needs in self._routes.get(_segment(path), ()):
            match = pattern.match(path)
            if match is not None and scope["method"] in methods:
                needs, trial_id = route_needs, match.groupdict().get("trial_id")
                break
        token = _bearer_of(scope)
        if needs is _Needs.TRIAL:
            await self._check_trial(token, trial_id)
        elif not self.settings.auth:
            return
        elif needs is _Needs.USER_OR_TRIAL and token and not token.startswith(USER_TOKEN_PREFIX):
            if await trial_of_token(token, self.database, self.tokens) is None:
                raise _not_signed_in("the token is neither a user's session token nor a trial's")
        elif token is None:
            raise _not_signed_in("not signed in")
        else:
            await self._check_user(token)

    async def _check_user(self, token: str) -> None:
        if not self.settings.auth:
            return
        if not token.startswith(USER_TOKEN_PREFIX):
            raise _not_signed_in("this is not a user's session token")
        if await signed_in_user(token, self.database, self.tokens) is None:
            raise _not_signed_in("the session token is unknown, expired or revoked")

    async def _check_trial(self, token: str | None, trial_id: str | None) -> None:
        if token is None:
            bearer_token(None)  # raises its 401
            return
        owner = await trial_of_token(token, self.database, self.tokens)
        if owner is None:
            raise token_error(None, 0)
        if trial_id is None or not trial_id.isdigit() or int(trial_id) > MAX_INT_ID:
            return  # a trial id the path cannot hold: the route's 422, not a token's error
        if owner != int(trial_id):
            raise token_error(owner, int(trial_id))


def _segment(path: str) -> str:
    """``/api/v1/trials/3/metrics`` -> ``trials``."""
    parts = path.split("/", 4)
    return parts[3] if len(parts) > 3 else ""


def _bearer_of(scope: Scope) -> str | None:
    """The request's bearer token, read as :class:`HTTPBearer` reads it (the first
    ``Authorization`` header; ``None`` without one, or with another scheme)."""
    for name, value in scope["headers"]:
        if name == b"authorization":
            scheme, credentials = get_authorization_scheme_param(value.decode("latin-1"))
            if scheme.lower() != "bearer" or not credentials:
                return None
            return credentials
    return None
