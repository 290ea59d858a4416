"""``/api/v1/tensorboards`` (start, list, show, kill) and ``/tensorboard/{id}/``, where the
master serves each TensorBoard it runs (:mod:`pedl.master.tensorboard`) behind its own
sign-in.

The proxy admits a signed-in user: a user's session token as a bearer token (the CLI, the
SDK, scripts), or in a cookie, since a page a browser opens cannot carry a bearer token:
the web UI's session cookie (``pedl_session``), or the ``pedl_tensorboard`` cookie that
``POST /tensorboards`` sets (``HttpOnly``, ``SameSite=Strict``, path ``/tensorboard/``) for
the browser that started it (the web UI's button). The
token and the cookie are not passed on to TensorBoard. With the master's ``auth`` off,
everyone is admitted.

:class:`ProxyGate` checks the caller, on the request's headers alone: 401 unless a user is
signed in (before a body is read, and before its size is looked at: the app's
:class:`~pedl.master.api._limits.RequestLimits` asks it first, as it asks
:class:`~pedl.master.api._auth.BodyAuth` for the API); then a request that changes state
(any method but GET, HEAD and OPTIONS) signed in by a cookie alone must carry a CSRF
header, else 403: the web UI's ``X-PEDL-CSRF`` (the ``pedl_csrf`` cookie's value), or one of
the headers that TensorBoard's own pages send with each of their POSTs
(:data:`TENSORBOARD_CSRF_HEADERS`). A page of another site can set none of them on a request
to the master (custom headers need a CORS preflight, which carries no cookie and is answered
401). The proxy adds the TensorBoard's own key (:attr:`TensorBoard.key
<pedl.master.tensorboard.TensorBoard.key>`), without which the TensorBoard process answers
403: its loopback port serves no one but this master.

An answer reaches the caller as TensorBoard sent it, but for its ``Server`` and ``Date``
headers (the master's server sends its own) and its compression: TensorBoard is asked for
gzip only when the caller asked for it, and a compressed answer to a caller that did not is
decoded (``curl`` of a data route reads plain JSON). TensorBoard's page asks for its fonts at
the site's root (``/font-roboto/...``): the master serves them from that page's TensorBoard,
behind the same sign-in, and ``/tensorboard/`` without an id is a 404, not the web UI's page.
"""

from __future__ import annotations

from collections.abc import AsyncIterator
from datetime import datetime
from typing import Annotated
from urllib.parse import urlsplit

import anyio.to_thread
import httpx
from fastapi import APIRouter, Query, Request, Response
from fastapi import Path as PathParam
from pydantic import BaseModel, ConfigDict, Field
from starlette.background import BackgroundTask
from starlette.requests import cookie_parser
from starlette.responses import RedirectResponse, StreamingResponse
from starlette.routing import BaseRoute, Route
from starlette.types import Scope

from pedl.db import Database, NotFoundError
from pedl.db import experiments as experiments_repo
from pedl.db import trials as trials_repo
from pedl.master.api._auth import (
    OWNER_RESPONSES,
    USER_AUTH_RESPONSES,
    CurrentUser,
    require_owner,
)
from pedl.master.api._deps import MAX_INT_ID, ReadSession
from pedl.master.api._errors import ERROR_RESPONSES, ApiError, error_response
from pedl.master.api._schemas import ResponseBody
from pedl.master.api._session_cookie import (
    CSRF_HEADER,
    SAFE_METHODS,
    UserCheck,
    csrf_echoed,
    csrf_refusal,
)
from pedl.master.tensorboard import (
    KEY_HEADER,
    LOG_LINES_KEPT,
    MAX_TRIALS,
    PATH_PREFIX,
    TensorBoard,
    TensorBoardError,
    TensorBoardManager,
    TensorBoardState,
    TrialSource,
)

COOKIE = "pedl_tensorboard"
SESSION_COOKIE = "pedl_session"
"""The web UI's session cookie (set at sign-in), also admitted."""
MAX_IDS = 100
PROXY_TIMEOUT_S = 60.0
_HOP_BY_HOP = frozenset(
    {
        b"connection",
        b"keep-alive",
        b"proxy-authenticate",
        b"proxy-authorization",
        b"te",
        b"trailer",
        b"transfer-encoding",
        b"upgrade",
        b"host",
        b"authorization",
        b"cookie",
        b"content-length",
        KEY_HEADER.lower().encode(),
    }
)
_ANSWER_HEADERS_DROPPED = _HOP_BY_HOP | {b"set-cookie", b"server", b"date"}
"""TensorBoard's answer headers the proxy does not pass on: its ``Server`` and ``Date``
(uvicorn adds the master's own to every answer) and any cookie it sets."""
FONTS_PATH = "/font-roboto"
"""Where TensorBoard's page asks for its fonts: at the site's root, not under its prefix."""
TENSORBOARD_CSRF_HEADERS = (b"x-xsrf-protected", b"x-tensorboard-feature-flags")
"""Headers TensorBoard's own pages send with their POSTs (its Angular client
``X-XSRF-Protected: 1``, its Polymer request manager ``X-TensorBoard-Feature-Flags``): a
cookie-signed request that changes state under ``/tensorboard/`` needs one of them, or the
web UI's ``X-PEDL-CSRF``."""

router = APIRouter(
    prefix="/tensorboards",
    tags=["tensorboards"],
    responses={**ERROR_RESPONSES, **USER_AUTH_RESPONSES},
)

TensorBoardId = Annotated[
    str,
    PathParam(pattern="^[0-9a-f]{32}$", description="TensorBoard id (as `start` answered)."),
]
IdList = Annotated[list[Annotated[int, Field(ge=1, le=MAX_INT_ID)]], Field(max_length=MAX_IDS)]


class TensorBoardCreate(BaseModel):
    """What a TensorBoard shows: the trials of experiments, and trials by id (at most
    100 trials in all; an experiment with more contributes its best 100)."""

    model_config = ConfigDict(extra="forbid")

    experiment_ids: IdList = Field(default_factory=list)
    trial_ids: IdList = Field(default_factory=list)


class TensorBoardPublic(ResponseBody):
    """A TensorBoard the master runs."""

    id: str
    owner: str
    state: TensorBoardState
    experiment_ids: list[int]
    trial_ids: list[int]
    service_address: str = Field(description="Its path on the master (signed in).")
    created_at: datetime
    exit_code: int | None = None
    error: str | None = Field(default=None, description="Why it ended, when it failed.")


def _public(board: TensorBoard) -> TensorBoardPublic:
    return TensorBoardPublic(
        id=board.id,
        owner=board.owner,
        state=board.state,
        experiment_ids=board.experiment_ids,
        trial_ids=board.trial_ids,
        service_address=board.service_address,
        created_at=board.created_at,
        exit_code=board.exit_code,
        error=board.error,
    )


def _manager(request: Request) -> TensorBoardManager:
    manager = getattr(request.app.state, "tensorboards", None)
    if manager is None:
        raise ApiError(409, "this master runs no TensorBoards (an API-only master)")
    assert isinstance(manager, TensorBoardManager)
    return manager


def _raise(err: TensorBoardError) -> ApiError:
    return ApiError(err.status, err.message, field=err.field)


def _sources(session: ReadSession, body: TensorBoardCreate) -> list[TrialSource]:
    sources: dict[int, TrialSource] = {}
    for index, experiment_id in enumerate(body.experiment_ids):
        try:
            experiment = experiments_repo.get_experiment(session, experiment_id)
        except NotFoundError as err:
            raise ApiError(
                404, f"no experiment {experiment_id}", field=f"experiment_ids[{index}]"
            ) from err
        trials = trials_repo.all_trials(session, experiment_id)
        if len(trials) > MAX_TRIALS:  # Determined's rule: the best ones
            sign = 1 if experiment.smaller_is_better else -1
            trials.sort(
                key=lambda t: (t.best_validation is None, sign * (t.best_validation or 0.0))
            )
            trials = trials[:MAX_TRIALS]
        for trial in trials:
            sources[trial.id] = TrialSource(experiment_id, trial.id)
    for index, trial_id in enumerate(body.trial_ids):
        try:
            trial = trials_repo.get_trial(session, trial_id)
        except NotFoundError as err:
            raise ApiError(404, f"no trial {trial_id}", field=f"trial_ids[{index}]") from err
        sources[trial.id] = TrialSource(trial.experiment_id, trial.id)
    return list(sources.values())


@router.post("", status_code=201)
async def start_tensorboard(
    body: TensorBoardCreate, request: Request, response: Response, user: CurrentUser
) -> TensorBoardPublic:
    """Start a TensorBoard over experiments' and trials' metrics and event files (a running
    one of the caller's over the same trials is answered instead). It is served at its
    ``service_address`` once its state is ``RUNNING``; the answer sets the cookie that lets
    this browser open it."""
    if not body.experiment_ids and not body.trial_ids:
        raise ApiError(422, "name experiments or trials to show", field="experiment_ids")
    manager = _manager(request)
    database: Database = request.app.state.database

    def start() -> TensorBoard:
        with database.session() as session:
            sources = _sources(session, body)
        experiment_ids = sorted({s.experiment_id for s in sources} | set(body.experiment_ids))
        return manager.launch(user.username, sources, experiment_ids, followed=body.experiment_ids)

    try:
        board = await anyio.to_thread.run_sync(start)
    except TensorBoardError as err:
        raise _raise(err) from err
    if user.token is not None:
        response.set_cookie(
            COOKIE, user.token, path=f"{PATH_PREFIX}/", httponly=True, samesite="strict"
        )
    return _public(board)


@router.get("")
async def list_tensorboards(request: Request, _user: CurrentUser) -> list[TensorBoardPublic]:
    """The TensorBoards this master runs (and those that failed), oldest first."""
    return [_public(b) for b in _manager(request).list()]


@router.get("/{tensorboard_id}")
async def get_tensorboard(
    tensorboard_id: TensorBoardId, request: Request, _user: CurrentUser
) -> TensorBoardPublic:
    """One TensorBoard."""
    try:
        return _public(_manager(request).get(tensorboard_id))
    except TensorBoardError as err:
        raise _raise(err) from err


@router.get("/{tensorboard_id}/logs")
async def get_tensorboard_logs(
    tensorboard_id: TensorBoardId,
    request: Request,
    _user: CurrentUser,
    tail: Annotated[int | None, Query(ge=1, le=LOG_LINES_KEPT)] = None,
) -> list[str]:
    """A TensorBoard's own output, oldest first: the last lines its process wrote (at most
    the last ``tail``); the master keeps its latest lines, not all."""
    try:
        lines = list(_manager(request).get(tensorboard_id).log)
    except TensorBoardError as err:
        raise _raise(err) from err
    return lines[-tail:] if tail else lines


@router.post("/{tensorboard_id}/kill", responses=OWNER_RESPONSES)
async def kill_tensorboard(
    tensorboard_id: TensorBoardId, request: Request, user: CurrentUser
) -> TensorBoardPublic:
    """Stop a TensorBoard: its process ends (waited for) and its cache is removed. Whoever
    started it or an administrator only (403)."""
    manager = _manager(request)
    try:
        board = manager.get(tensorboard_id)
        require_owner(user, board.owner, f"TensorBoard {tensorboard_id}")
        board = await anyio.to_thread.run_sync(manager.stop, tensorboard_id)
    except TensorBoardError as err:
        raise _raise(err) from err
    return _public(board)


# -- the proxy -------------------------------------------------------------------------------


class ProxyGate:
    """Who may use ``/tensorboard/{id}/...`` (see the module's docstring): checked on a
    request's headers alone, with ``check_user`` (the app's
    :meth:`~pedl.master.api._auth.BodyAuth.user_refusal`) for its session token. Nobody is
    refused when ``auth`` is off."""

    def __init__(self, *, auth: bool, check_user: UserCheck) -> None:
        self.auth = auth
        self.check_user = check_user

    async def __call__(self, scope: Scope) -> Response | None:
        """The answer refusing this request (401, 403; 503 when the database cannot be
        asked), or ``None`` to serve it."""
        if not self.auth:
            return None
        token, by_cookie, echoed, tensorboards_own = _credentials(scope)
        refused = None if token is None else await self.check_user(token, scope)
        if token is None or (refused is not None and refused.status_code == 401):
            return error_response(
                401,
                "not signed in: open TensorBoard from the web UI (its TensorBoard button), or "
                "send a user's session token as a bearer token",
                field="Authorization",
            )
        if refused is not None:
            return refused
        if (
            by_cookie
            and scope["method"] not in SAFE_METHODS
            and not tensorboards_own
            and not csrf_echoed(token, echoed)
        ):
            return csrf_refusal()
        return None


def _credentials(scope: Scope) -> tuple[str | None, bool, str | None, bool]:
    """The request's session token (a bearer token, else the ``pedl_tensorboard`` cookie,
    else the web UI's session cookie), whether it came from a cookie, its
    :data:`CSRF_HEADER`, and whether it carries one of :data:`TENSORBOARD_CSRF_HEADERS`."""
    bearer = cookies = echoed = None
    tensorboards_own = False
    for name, value in scope["headers"]:
        if name == b"authorization" and bearer is None:
            scheme, _, credentials = value.decode("latin-1").partition(" ")
            bearer = credentials.strip() if scheme.lower() == "bearer" else ""
        elif name == b"cookie":
            cookies = value.decode("latin-1")
        elif name == CSRF_HEADER.lower().encode():
            echoed = value.decode("latin-1")
        elif name in TENSORBOARD_CSRF_HEADERS:
            tensorboards_own = True
    if bearer:
        return bearer, False, echoed, tensorboards_own
    jar = cookie_parser(cookies) if cookies else {}
    token = jar.get(COOKIE) or jar.get(SESSION_COOKIE) or None
    return token, token is not None, echoed, tensorboards_own


async def _proxy(request: Request) -> Response:
    board_id = request.path_params["board_id"]
    gate = request.app.state.tensorboard_gate
    assert isinstance(gate, ProxyGate)
    refused = await gate(request.scope)
    if refused is not None:
        return refused
    board = _board(request, board_id)
    if board is None:
        return error_response(404, f"no TensorBoard {board_id!r}", field="tensorboard_id")
    if "path" not in request.path_params:
        return RedirectResponse(f"{PATH_PREFIX}/{board_id}/", status_code=308)
    return await _forward(request, board, request.url.path)


async def _fonts(request: Request) -> Response:
    """``/font-roboto/...``: the fonts TensorBoard's page asks for at the site's root (its
    ``index.html`` names them so, whatever its path prefix), from the TensorBoard whose page
    asked (the ``Referer``), else from any running one: they are the same files."""
    gate = request.app.state.tensorboard_gate
    assert isinstance(gate, ProxyGate)
    refused = await gate(request.scope)
    if refused is not None:
        return refused
    try:
        referer = urlsplit(request.headers.get("referer", "")).path
    except ValueError:  # not a URL: as if none
        referer = ""
    _, _, below = referer.partition(f"{PATH_PREFIX}/")
    board = _board(request, below.split("/", 1)[0]) if below else None
    if board is None or board.state is not TensorBoardState.RUNNING:
        manager = getattr(request.app.state, "tensorboards", None)
        running = (
            [b for b in manager.list() if b.state is TensorBoardState.RUNNING]
            if isinstance(manager, TensorBoardManager)
            else []
        )
        if not running:
            return error_response(404, "no TensorBoard is running to serve its fonts")
        board = running[0]
    return await _forward(request, board, f"{PATH_PREFIX}/{board.id}{request.url.path}")


async def _no_board(request: Request) -> Response:
    return error_response(
        404, f"name a TensorBoard: {PATH_PREFIX}/<id>/ (GET /api/v1/tensorboards lists them)"
    )


def _board(request: Request, board_id: str) -> TensorBoard | None:
    manager = getattr(request.app.state, "tensorboards", None)
    if not isinstance(manager, TensorBoardManager):
        return None
    try:
        return manager.get(board_id)
    except TensorBoardError:
        return None


def _accepts_gzip(request: Request) -> bool:
    """Whether the caller's ``Accept-Encoding`` admits gzip (``q=0`` refuses it)."""
    for item in request.headers.get("accept-encoding", "").split(","):
        coding, _, params = item.partition(";")
        if coding.strip().lower() in ("gzip", "*"):
            name, _, value = params.strip().partition("=")
            try:
                return name.strip().lower() != "q" or float(value) > 0
            except ValueError:
                return True
    return False


async def _forward(request: Request, board: TensorBoard, path: str) -> Response:
    """Send the request to ``board`` at ``path`` with the board's key, and stream its answer
    back: decoded when TensorBoard compressed it and the caller did not ask for gzip,
    without TensorBoard's own ``Server`` and ``Date`` (the master's server sends its own)."""
    if board.state is TensorBoardState.STARTING or board.port is None:
        return error_response(503, f"TensorBoard {board.id} is starting", retry_after_s=1)
    if board.state is not TensorBoardState.RUNNING:
        return error_response(
            409, f"TensorBoard {board.id} is {board.state.value}: {board.error or 'stopped'}"
        )
    url = httpx.URL(
        f"http://127.0.0.1:{board.port}{path}", query=request.url.query.encode("latin-1")
    )
    gzip_ok = _accepts_gzip(request)
    headers = [
        (k, v)
        for k, v in request.headers.raw
        if k.lower() not in _HOP_BY_HOP and k.lower() != b"accept-encoding"
    ]
    # Without this, httpx would ask for its own encodings on the caller's behalf.
    headers.append((b"accept-encoding", b"gzip" if gzip_ok else b"identity"))
    headers.append((KEY_HEADER.encode(), board.key.encode()))
    client = httpx.AsyncClient(timeout=PROXY_TIMEOUT_S)
    try:
        upstream = await client.send(
            client.build_request(
                request.method, url, headers=headers, content=await request.body()
            ),
            stream=True,
        )
    except httpx.HTTPError as err:
        await client.aclose()
        return error_response(502, f"TensorBoard {board.id} did not answer: {err}")
    encoded = upstream.headers.get("content-encoding", "identity").lower() != "identity"
    decode = encoded and not gzip_ok
    dropped = _ANSWER_HEADERS_DROPPED | ({b"content-encoding"} if decode else set())

    async def body() -> AsyncIterator[bytes]:
        chunks = upstream.aiter_bytes() if decode else upstream.aiter_raw()
        async for chunk in chunks:
            yield chunk

    async def close() -> None:
        await upstream.aclose()
        await client.aclose()

    return StreamingResponse(
        body(),
        status_code=upstream.status_code,
        headers={k: v for k, v in upstream.headers.items() if k.lower().encode() not in dropped},
        background=BackgroundTask(close),
    )


_METHODS = ["GET", "HEAD", "POST", "PUT", "DELETE", "PATCH", "OPTIONS"]


def proxy_routes() -> list[BaseRoute]:
    """The routes of ``/tensorboard/{id}/...`` and of TensorBoard's fonts (before the web
    UI's catch-all, so no TensorBoard path gets the UI's page)."""
    return [
        Route(PATH_PREFIX, _no_board, methods=_METHODS),
        Route(f"{PATH_PREFIX}/", _no_board, methods=_METHODS),
        Route(f"{FONTS_PATH}/{{path:path}}", _fonts, methods=["GET", "HEAD"]),
        Route(f"{PATH_PREFIX}/{{board_id}}", _proxy, methods=_METHODS),
        Route(f"{PATH_PREFIX}/{{board_id}}/{{path:path}}", _proxy, methods=_METHODS),
    ]
