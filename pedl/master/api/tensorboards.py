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
"""

from __future__ import annotations

from collections.abc import AsyncIterator
from datetime import datetime
from typing import Annotated

import anyio.to_thread
import httpx
from fastapi import APIRouter, Request, Response
from fastapi import Path as PathParam
from pydantic import BaseModel, ConfigDict, Field
from starlette.background import BackgroundTask
from starlette.responses import RedirectResponse, StreamingResponse
from starlette.routing import BaseRoute, Route

from pedl.master.api._auth import (
    OWNER_RESPONSES,
    USER_AUTH_RESPONSES,
    USER_TOKEN_PREFIX,
    CurrentUser,
    require_owner,
    signed_in_user,
    token_cache,
)
from pedl.master.api._deps import MAX_INT_ID, ReadSession
from pedl.master.api._errors import ERROR_RESPONSES, ApiError, error_response
from pedl.master.db import Database, NotFoundError
from pedl.master.db import experiments as experiments_repo
from pedl.master.db import trials as trials_repo
from pedl.master.tensorboard import (
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
    }
)

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


class TensorBoardPublic(BaseModel):
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


async def _admitted(request: Request) -> bool:
    if not request.app.state.settings.auth:
        return True
    header = request.headers.get("authorization", "")
    scheme, _, token = header.partition(" ")
    token = token.strip() if scheme.lower() == "bearer" else ""
    token = token or request.cookies.get(COOKIE) or request.cookies.get(SESSION_COOKIE, "")
    if not token.startswith(USER_TOKEN_PREFIX):
        return False
    user = await signed_in_user(token, request.app.state.database, token_cache(request))
    return user is not None


async def _proxy(request: Request) -> Response:
    board_id = request.path_params["board_id"]
    if not await _admitted(request):
        return error_response(
            401,
            "not signed in: open TensorBoard from the web UI (its TensorBoard button), or "
            "send a user's session token as a bearer token",
            field="Authorization",
        )
    manager = getattr(request.app.state, "tensorboards", None)
    board = None
    if isinstance(manager, TensorBoardManager):
        try:
            board = manager.get(board_id)
        except TensorBoardError:
            board = None
    if board is None:
        return error_response(404, f"no TensorBoard {board_id!r}", field="tensorboard_id")
    if "path" not in request.path_params:
        return RedirectResponse(f"{PATH_PREFIX}/{board_id}/", status_code=308)
    if board.state is TensorBoardState.STARTING or board.port is None:
        return error_response(503, f"TensorBoard {board_id} is starting", retry_after_s=1)
    if board.state is not TensorBoardState.RUNNING:
        return error_response(
            409, f"TensorBoard {board_id} is {board.state.value}: {board.error or 'stopped'}"
        )
    url = httpx.URL(
        f"http://127.0.0.1:{board.port}{request.url.path}",
        query=request.url.query.encode("latin-1"),
    )
    headers = [(k, v) for k, v in request.headers.raw if k.lower() not in _HOP_BY_HOP]
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
        return error_response(502, f"TensorBoard {board_id} did not answer: {err}")

    async def body() -> AsyncIterator[bytes]:
        async for chunk in upstream.aiter_raw():
            yield chunk

    async def close() -> None:
        await upstream.aclose()
        await client.aclose()

    return StreamingResponse(
        body(),
        status_code=upstream.status_code,
        headers={
            k: v
            for k, v in upstream.headers.items()
            if k.lower().encode() not in _HOP_BY_HOP and k.lower() != "set-cookie"
        },
        background=BackgroundTask(close),
    )


_METHODS = ["GET", "HEAD", "POST", "PUT", "DELETE", "PATCH", "OPTIONS"]


def proxy_routes() -> list[BaseRoute]:
    """The routes of ``/tensorboard/{id}/...`` (before the web UI's catch-all)."""
    return [
        Route(f"{PATH_PREFIX}/{{board_id}}", _proxy, methods=_METHODS),
        Route(f"{PATH_PREFIX}/{{board_id}}/{{path:path}}", _proxy, methods=_METHODS),
    ]
