"""``/api/v1/auth``, ``/api/v1/me`` and ``/api/v1/users``: signing in and out, accounts.

Signing in (``POST /auth/login``) is the one route here that needs no token. Creating,
listing, deactivating and activating accounts is for administrators; users change their own
password (giving the old one), administrators anyone's.
"""

from __future__ import annotations

from datetime import UTC, datetime, timedelta
from typing import Annotated, Any

from fastapi import APIRouter, Request, Response
from fastapi import Path as PathParam

from pedl.db import users as users_repo
from pedl.master._settings import MasterSettings
from pedl.master.api._auth import (
    OWNER_RESPONSES,
    USER_AUTH_RESPONSES,
    AdminUser,
    CurrentUser,
    token_cache,
)
from pedl.master.api._deps import DatabaseDep, ReadSession, WriteSession
from pedl.master.api._errors import ERROR_RESPONSES, ApiError
from pedl.master.api._login_throttle import LoginThrottle
from pedl.master.api._schemas import ErrorResponse
from pedl.master.api._session_cookie import clear_session_cookies, set_session_cookies
from pedl.master.api._user_schemas import (
    USERNAME_PATTERN,
    Login,
    LoginPublic,
    PasswordChange,
    UserCreate,
    UserPatch,
    UserPublic,
)

router = APIRouter(tags=["users"], responses=ERROR_RESPONSES)

UsernamePath = Annotated[
    str, PathParam(pattern=USERNAME_PATTERN, max_length=128, description="Username.")
]


_LOGIN_RESPONSES: dict[int | str, dict[str, Any]] = {
    401: {"model": ErrorResponse, "description": "Wrong username or password"},
    429: {
        "model": ErrorResponse,
        "description": "Too many failed attempts: try again after Retry-After seconds",
    },
}


def login_throttle(request: Request) -> LoginThrottle:
    """The app's :class:`LoginThrottle`, made from its settings on first use."""
    throttle = getattr(request.app.state, "login_throttle", None)
    if not isinstance(throttle, LoginThrottle):
        settings = request.app.state.settings
        assert isinstance(settings, MasterSettings)
        throttle = LoginThrottle(
            max_failures=settings.login_max_failures,
            max_failures_per_address=settings.login_max_failures_per_address,
            window_seconds=settings.login_failure_window_seconds,
        )
        request.app.state.login_throttle = throttle
    return throttle


def _client_address(request: Request) -> str:
    """The address the throttle counts a password check against ("" when unknown)."""
    return request.client.host if request.client is not None else ""


def _refuse_if_throttled(wait: int | None, *, field: str) -> None:
    """Answer 429 with ``Retry-After`` when :meth:`LoginThrottle.begin` returned a wait."""
    if wait is not None:
        raise ApiError(
            429,
            f"too many failed password attempts for this username or from this address; try "
            f"again in {wait} seconds (the master's login_max_failures, "
            "login_max_failures_per_address and login_failure_window_seconds settings)",
            field=field,
            headers={"Retry-After": str(wait)},
        )


@router.post("/auth/login", responses=_LOGIN_RESPONSES)
def login(body: Login, database: DatabaseDep, request: Request, response: Response) -> LoginPublic:
    """Sign in: a new session token for ``username``, valid for the master's
    ``token_lifetime_hours`` (default 7 days) or until ``POST /auth/logout``; the same token
    in an HttpOnly, SameSite=Strict cookie for the web UI, with its CSRF cookie (see
    :mod:`._session_cookie`). 401 for a
    wrong username or password or a deactivated account (the same answer for each). 429
    with ``Retry-After``, without the password being checked, after ``login_max_failures``
    attempts for the username (``login_max_failures_per_address`` from the client's
    address) in ``login_failure_window_seconds`` (see :mod:`._login_throttle`).

    The password is checked in a read transaction and the session written in a short one
    after it: the slow hash never holds the database's write lock (on SQLite, every other
    writer's, metric reports' included)."""
    settings = request.app.state.settings
    assert isinstance(settings, MasterSettings)
    throttle = login_throttle(request)
    address = _client_address(request)
    _refuse_if_throttled(throttle.begin(body.username, address), field="username")
    with database.session() as session:
        user = users_repo.check_password(session, body.username, body.password)
    if user is None:
        raise ApiError(401, "wrong username or password", field="password")
    throttle.succeeded(body.username, address)
    new_hash = users_repo.rehashed(user, body.password)
    with database.session(write=True) as session:
        if new_hash is not None:
            users_repo.replace_hash(session, user.id, new_hash)
        users_repo.delete_expired_sessions(session)
        token, expires_at = users_repo.create_session(
            session, user.id, timedelta(hours=settings.token_lifetime_hours)
        )
    set_session_cookies(response, request.scope, token, expires_at, datetime.now(UTC))
    return LoginPublic(token=token, username=user.username, admin=user.admin, expires_at=expires_at)


@router.post("/auth/logout", status_code=204, responses=USER_AUTH_RESPONSES)
def logout(user: CurrentUser, session: WriteSession, request: Request) -> Response:
    """Sign out: the session token of this request (its bearer token or its session
    cookie) stops working, and the browser drops the session's cookies."""
    if user.token is not None:
        users_repo.end_session(session, user.token)
        token_cache(request).forget(user.token)
    response = Response(status_code=204)
    clear_session_cookies(response, request.scope)
    return response


@router.get("/me", responses=USER_AUTH_RESPONSES)
def who_am_i(user: CurrentUser, session: ReadSession) -> UserPublic:
    """The signed-in user."""
    return UserPublic.model_validate(users_repo.get_user(session, user.username))


@router.get("/users", responses=OWNER_RESPONSES)
def list_users(admin: AdminUser, session: ReadSession) -> list[UserPublic]:
    """Every account, by username (administrators only)."""
    return [UserPublic.model_validate(user) for user in users_repo.list_users(session)]


@router.get("/users/by-id/{user_id}", responses=USER_AUTH_RESPONSES)
def get_user_by_id(
    user_id: Annotated[int, PathParam(ge=1, description="The account's id.")],
    user: CurrentUser,
    session: ReadSession,
) -> UserPublic:
    """The account with this id (any signed-in user; 404 if none)."""
    return UserPublic.model_validate(users_repo.get_user_by_id(session, user_id))


@router.get("/users/{username}", responses=USER_AUTH_RESPONSES)
def get_user(username: UsernamePath, user: CurrentUser, session: ReadSession) -> UserPublic:
    """The account named ``username`` (any signed-in user; 404 if none)."""
    return UserPublic.model_validate(users_repo.get_user(session, username))


@router.patch("/users/{username}", responses=OWNER_RESPONSES)
def patch_user(
    username: UsernamePath,
    body: UserPatch,
    admin: AdminUser,
    session: WriteSession,
    request: Request,
) -> UserPublic:
    """Change an account (administrators only; ``det user edit``, ``det user rename``):
    ``username`` renames it and the owner of everything it owns (409 if taken, or for
    ``admin``), ``admin`` grants or takes away the role, ``active`` activates or
    deactivates it (409 for the last active administrator). ``display_name`` is refused:
    PEDL keeps none."""
    if body.display_name is not None:
        raise ApiError(
            422, "PEDL keeps no display names: accounts are named by username", field="display_name"
        )
    user = users_repo.get_user(session, username)
    if body.active is not None:
        user = users_repo.set_active(session, username, body.active)
    if body.admin is not None:
        user = users_repo.set_admin(session, username, body.admin)
    if body.username is not None:
        user = users_repo.rename_user(session, username, body.username)
    token_cache(request).forget()
    return UserPublic.model_validate(user)


@router.post("/users", status_code=201, responses=OWNER_RESPONSES)
def create_user(body: UserCreate, admin: AdminUser, session: WriteSession) -> UserPublic:
    """Create an account (administrators only); 409 if the username is taken."""
    user = users_repo.create_user(
        session,
        body.username,
        password_hash=users_repo.hash_password(body.password),
        admin=body.admin,
    )
    return UserPublic.model_validate(user)


@router.post(
    "/users/{username}/password",
    status_code=204,
    responses={**OWNER_RESPONSES, 429: _LOGIN_RESPONSES[429]},
)
def change_password(
    username: UsernamePath,
    body: PasswordChange,
    user: CurrentUser,
    database: DatabaseDep,
    request: Request,
) -> Response:
    """Set ``username``'s password: one's own (``old_password`` required), or anyone's as an
    administrator. The account's other sessions end (this request's stays valid).

    Checking one's own ``old_password`` counts against the same throttle as signing in
    (per username and per client address, see :mod:`._login_throttle`): after the limit,
    429 with ``Retry-After`` without the password being checked, and sign-ins to the
    account or from the address are throttled too.

    The current password is checked in a read transaction and the new one hashed before the
    short write transaction: the slow hash never holds the database's write lock."""
    if username == user.username:
        if body.old_password is None:
            raise ApiError(422, "give your current password to change it", field="old_password")
        throttle = login_throttle(request)
        address = _client_address(request)
        _refuse_if_throttled(throttle.begin(username, address), field="old_password")
        with database.session() as session:
            if users_repo.check_password(session, username, body.old_password) is None:
                raise ApiError(403, "the current password is wrong", field="old_password")
        throttle.succeeded(username, address)
    elif not user.admin:
        raise ApiError(
            403, "only an administrator may change another user's password", field="username"
        )
    password_hash = users_repo.hash_password(body.password)
    with database.session(write=True) as session:
        users_repo.set_password(session, username, password_hash, keep_token=user.token)
    token_cache(request).forget()
    return Response(status_code=204)


@router.post("/users/{username}/deactivate", responses=OWNER_RESPONSES)
def deactivate_user(
    username: UsernamePath, admin: AdminUser, session: WriteSession, request: Request
) -> UserPublic:
    """Deactivate an account (administrators only): it can no longer sign in and its
    sessions end; its experiments stay. 409 for the last active administrator."""
    user = users_repo.set_active(session, username, False)
    token_cache(request).forget()
    return UserPublic.model_validate(user)


@router.post("/users/{username}/activate", responses=OWNER_RESPONSES)
def activate_user(username: UsernamePath, admin: AdminUser, session: WriteSession) -> UserPublic:
    """Let a deactivated account sign in again (administrators only)."""
    return UserPublic.model_validate(users_repo.set_active(session, username, True))
