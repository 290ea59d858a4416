"""The FastAPI application factory, and its sizing and load shedding.

Sizing (from :class:`MasterSettings`): the database pool holds at most ``db_connections``
connections (``max_db_connections``; default 16 on SQLite, 20 on PostgreSQL; no overflow) and
a checkout waits ``db_pool_timeout`` seconds; blocking handlers run on ``worker_threads``
threads (``api_threads``; default ``db_connections - 4``, less the bulk metric writers, so
every worker thread can hold a connection while the metric writers and the orchestrator keep
theirs). Requests without a trial token run at most ``user_request_slots`` at a time
(``max_user_requests``; default ``worker_threads - 2``), the rest wait on the event loop: the
trials' requests always find a worker thread soon. Metric reports need no worker thread (they
await the group-commit writers), nor does the health check.

Shedding, always 503 with ``Retry-After`` (``retry_after_seconds``) and the standard error
body: more than ``max_requests_in_flight`` requests being served (:class:`InFlightLimit`),
no free connection within ``db_pool_timeout``, a database lock or connection refused (see
:mod:`._errors`), more than ``max_queued_reports`` reports waiting for the metric writer, a
body that would take the bodies held at once past ``max_upload_memory_bytes``
(:class:`~._limits.BodyMemory`, checked after the caller, before the body is read).
"""

from __future__ import annotations

import asyncio
import logging
import re
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from pathlib import Path

import anyio.to_thread
from fastapi import FastAPI
from fastapi.routing import APIRoute
from starlette.responses import Response
from starlette.types import ASGIApp, Receive, Scope, Send

from pedl import __version__
from pedl.db import CheckedReport, Database, MetricIngestor, NotFoundError
from pedl.db._engine import make_private_dirs
from pedl.db.metrics import MetricReport
from pedl.master._log_retention import LogRetention
from pedl.master._master_log import MasterLog
from pedl.master._settings import MasterSettings
from pedl.master.api import (
    checkpoints,
    cluster,
    cluster_message,
    downloads,
    experiment_ops,
    experiments,
    health,
    master_config,
    master_info,
    master_logs,
    models,
    pareto,
    projects,
    system_metrics,
    templates,
    tensorboards,
    trial_ops,
    trials,
    users,
    visualization,
    workspaces,
)
from pedl.master.api._auth import PUBLIC_PATHS, USER_TOKEN_PREFIX, BodyAuth, TokenCache
from pedl.master.api._deps import MAX_INT_ID
from pedl.master.api._errors import (
    ApiError,
    error_response,
    install_error_handlers,
    is_transient_db_error,
)
from pedl.master.api._forward import (
    Forwarding,
    ReadForwarder,
    ReadRoutes,
    ReadsOnly,
    ReadSource,
)
from pedl.master.api._limits import (
    Authenticate,
    BodyMemory,
    RequestLimits,
    read_body,
    replay_body,
)
from pedl.master.api._report_check import REMOTE_CHECK_BYTES, ReportChecks, ReportCheckServer
from pedl.master.api._session_cookie import SessionCookies
from pedl.master.api._web_ui import UI_DIST, web_ui_route
from pedl.master.orchestrator import Orchestrator
from pedl.master.tensorboard import PATH_PREFIX, TensorBoardManager

API_PREFIX = "/api/v1"
MAX_FAST_BODY = 1 << 20

logger = logging.getLogger("pedl.master.api")


def _callers(body_auth: BodyAuth, gate: tensorboards.ProxyGate) -> Authenticate:
    """Who may send a body: the TensorBoard proxy's callers by ``gate``, the others by
    ``body_auth``."""
    prefix = f"{PATH_PREFIX}/"

    async def authenticate(scope: Scope) -> Response | None:
        if scope["path"].startswith(prefix):
            return await gate(scope)
        return await body_auth(scope)

    return authenticate


def _operation_id(route: APIRoute) -> str:
    # Stable, readable operation ids for SDK generators: the handler's name (unique).
    return route.name


class InFlightLimit:
    """ASGI middleware: at most ``limit`` HTTP requests are served at once; the next ones are
    answered 503 with ``Retry-After`` at once, without reading their bodies (the health check
    is always served). Of those, requests without a trial's bearer token (users, dashboards)
    run at most ``user_slots`` at a time; the others wait their turn here, on the event loop,
    in arrival order, so the worker threads never all queue behind readers and a trial's
    request waits at most for ``user_slots`` of them. Counters, no lock: the event loop is
    one thread."""

    def __init__(self, app: ASGIApp, *, limit: int, user_slots: int, retry_after_s: int) -> None:
        self.app = app
        self.limit = limit
        self.user_slots = user_slots
        self.retry_after_s = retry_after_s
        self.in_flight = 0
        self.shed = 0
        self._users: asyncio.Semaphore | None = None

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] != "http" or scope["path"].endswith("/health"):
            await self.app(scope, receive, send)
            return
        if self.in_flight >= self.limit:
            self.shed += 1
            response = error_response(
                503,
                f"the master is serving {self.limit} requests; retry later",
                retry_after_s=self.retry_after_s,
            )
            await response(scope, receive, send)
            return
        self.in_flight += 1
        try:
            if _has_bearer_token(scope):
                await self.app(scope, receive, send)
                return
            if self._users is None:
                self._users = asyncio.Semaphore(self.user_slots)
            async with self._users:
                await self.app(scope, receive, send)
        finally:
            self.in_flight -= 1


def _has_bearer_token(scope: Scope) -> bool:
    """Whether the request carries a trial's bearer token (a user's session token does not
    count: users wait for the user slots)."""
    for name, value in scope["headers"]:
        if name == b"authorization":
            return value[:7].lower() == b"bearer " and not value[7:].lstrip().startswith(
                _USER_TOKEN
            )
    return False


_USER_TOKEN = USER_TOKEN_PREFIX.encode()


_METRICS_PATH = re.compile(rf"^{API_PREFIX}/trials/([1-9][0-9]{{0,9}})/metrics$")


class MetricReportFastPath:
    """ASGI middleware: ``POST /trials/{id}/metrics`` (the trials' periodic reports, by far the
    most frequent request) served without FastAPI's routing and dependency resolution, which
    cost more event-loop time than the rest of the report. Same contract as the route
    (:func:`~pedl.master.api.trials.report_metrics`): the body is parsed once, by pydantic's
    core alone (:func:`~pedl.master.api.trials.fast_metric_rows`: no ``json.loads``, no
    Python call per value, the values' bound checked there), then handed to the same
    :func:`~pedl.master.api.trials.ingest_report` with the body's text (which the database
    may store as it is, see :func:`~pedl.db.metrics.report_text`). Anything unusual (no bearer
    token, not JSON, a body that schema refuses, over 1 MiB, not a report) goes to the app
    itself, body replayed, so its errors are exactly the route's. With ``checks`` (the master's
    read processes), a body of :data:`~._report_check.REMOTE_CHECK_BYTES` or more
    is checked by a read process instead, off this process's GIL (:mod:`._report_check`)."""

    def __init__(
        self,
        app: ASGIApp,
        *,
        ingestor: MetricIngestor,
        retry_after_s: int,
        checks: ReportChecks | None = None,
    ) -> None:
        self.app = app
        self.ingestor = ingestor
        self.retry_after_s = retry_after_s
        self.checks = checks

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        match = None
        if scope["type"] == "http" and scope["method"] == "POST":
            match = _METRICS_PATH.match(scope["path"])
        if match is None or int(match[1]) > MAX_INT_ID:
            await self.app(scope, receive, send)
            return
        headers = dict(scope["headers"])
        scheme, _, token = headers.get(b"authorization", b"").decode("latin-1").partition(" ")
        token = token.strip()  # as HTTPBearer reads it
        length = headers.get(b"content-length", b"")
        if (
            scheme.lower() != "bearer"
            or not token
            or not headers.get(b"content-type", b"").startswith(b"application/json")
            or not length.isdigit()
            or int(length) > MAX_FAST_BODY
        ):
            await self.app(scope, receive, send)
            return
        body = await read_body(receive)
        rows: list[MetricReport] | CheckedReport | None = None
        if self.checks is not None and len(body) >= REMOTE_CHECK_BYTES:
            rows = await self.checks.check(body)
        if rows is None:
            rows = trials.fast_metric_rows(body)
        if rows is None:
            await self.app(scope, replay_body(body, receive), send)
            return
        response = await self._ingest(int(match[1]), rows, token, body)
        await response(scope, receive, send)

    async def _ingest(
        self, trial_id: int, rows: list[MetricReport] | CheckedReport, token: str, body: bytes
    ) -> Response:
        try:
            answer = await trials.ingest_report(
                self.ingestor, trial_id, rows, token, values_checked=True, body=body
            )
        except ApiError as err:
            return error_response(
                err.status_code,
                err.message,
                field=err.field,
                headers=err.headers,
                retry_after_s=self.retry_after_s,
            )
        except NotFoundError as err:
            return error_response(404, err.message)
        except Exception as err:
            if is_transient_db_error(err):
                logger.warning("shedding a metric report: %s", err)
                message = "the database is busy or unavailable; retry later"
                return error_response(503, message, retry_after_s=self.retry_after_s)
            logger.exception("unhandled error", exc_info=err)
            return error_response(500, "internal server error")
        return Response(answer.model_dump_json(), media_type="application/json")


class _MasterApp(FastAPI):
    """FastAPI with the master's own ASGI layers (``front``: :class:`InFlightLimit`, then
    :class:`~._limits.RequestLimits`, :class:`MetricReportFastPath` and
    :class:`~._forward.ReadForwarder`, or :class:`~._forward.ReadsOnly`) in front of FastAPI's
    middleware stack instead of inside it: what they answer themselves (shed requests, metric
    reports, forwarded reads) skips FastAPI's five layers of middleware (~13% of the master's CPU
    under P5b's load); the rest goes on to FastAPI unchanged (:meth:`fastapi`). They handle their
    own errors: the fast path answers them in the standard error shape (a 500 too), a read that
    fails to forward goes on to FastAPI."""

    front: ASGIApp | None = None

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if self.front is None:
            await super().__call__(scope, receive, send)
        else:
            await self.front(scope, receive, send)

    async def fastapi(self, scope: Scope, receive: Receive, send: Send) -> None:
        """FastAPI's own handling of a request (its middleware, routing, error handlers)."""
        await super().__call__(scope, receive, send)


def make_database(settings: MasterSettings) -> Database:
    """The master's :class:`Database`, its pool sized from ``settings``."""
    return Database(
        settings.db_url, pool_size=settings.db_connections, pool_timeout=settings.db_pool_timeout
    )


def create_app(
    settings: MasterSettings,
    *,
    database: Database | None = None,
    orchestrator: Orchestrator | None = None,
    reads: ReadSource | None = None,
    reads_only: bool = False,
    ui_dir: Path = UI_DIST,
    master_log: MasterLog | None = None,
) -> FastAPI:
    """Build the master's REST API (OpenAPI at ``/docs`` and ``/openapi.json``).

    Creating the app opens no connection. On startup it builds the route table and the OpenAPI
    schema (which FastAPI would otherwise build on the first request), creates ``settings.home``
    and applies the database migrations; on shutdown it disposes the engine. Pass ``database``
    to share one :class:`Database` with other parts of the master (the caller then disposes it);
    otherwise one is made from ``settings.db_url``. The metric writer (:class:`MetricIngestor`,
    group commit of ``POST /trials/{id}/metrics``) starts after the migrations and, on shutdown,
    writes what is queued and stops before the orchestrator and the engine; so does the log
    retention sweeper (:class:`~pedl.master._log_retention.LogRetention`). With an
    ``orchestrator`` (built on the same ``database``) the app runs experiments: the orchestrator
    starts after the migrations and stops (killing its trial processes) before the engine is
    disposed; without one it is an API-only master whose trial-operation routes answer 409. With
    ``reads`` (read processes, see :mod:`._forward`) the database reads of
    :data:`~._forward.READ_ROUTES` are forwarded to them (counted in
    ``app.state.read_forwarding``); they are started last and stopped first. ``reads_only``
    builds a read process's app: only those reads and the health check (anything else answers
    404), no migrations (the master applies them before it starts its read processes), no metric
    writer. On startup the worker-thread limit is set to ``settings.worker_threads``; see the
    module's docstring for the sizing and the load shedding. The web UI built into ``ui_dir``
    (default: the package's ``ui_dist``) is served at ``/``; when it is not built, ``/`` says
    how to build it. The master's own log lines are kept in ``master_log`` (a new
    :class:`MasterLog` unless given; none in a read process), attached to the root logger
    while the app runs, for ``GET /master/logs``.
    """
    owned = database is None
    if master_log is None and not reads_only:
        master_log = MasterLog()
    db = make_database(settings) if database is None else database
    ingestor = (
        None
        if reads_only
        else MetricIngestor(
            db, max_queued=settings.max_queued_reports, writers=settings.metric_writers
        )
    )
    forwarding = None if reads is None else Forwarding()
    boards = None if reads_only else TensorBoardManager(db, settings.home)
    retention = None if reads_only else LogRetention(db)

    @asynccontextmanager
    async def lifespan(_app: FastAPI) -> AsyncIterator[None]:
        anyio.to_thread.current_default_thread_limiter().total_tokens = settings.worker_threads
        # FastAPI builds its table of the included routers' routes (a pydantic schema for
        # every parameter and response) on the first request, on the event loop: ~0.1 s idle,
        # many seconds on a busy machine, during which nothing else is served (the trials
        # reconnecting after a master restart). Generating the OpenAPI schema builds it, so
        # it is done here, before the port opens, off the loop.
        await anyio.to_thread.run_sync(_app.openapi)
        if master_log is not None:
            master_log.attach()
        if ingestor is not None:
            make_private_dirs(settings.home)
            await anyio.to_thread.run_sync(db.upgrade)
            ingestor.start()
        if retention is not None:
            retention.start()
        if boards is not None:
            boards.start()
        if orchestrator is not None:
            await anyio.to_thread.run_sync(orchestrator.start)
        if reads is not None:
            await reads.start()
        try:
            yield
        finally:
            if reads is not None and forwarding is not None:
                await forwarding.close()
                await reads.stop()
            if boards is not None:
                await anyio.to_thread.run_sync(boards.close)
            if retention is not None:
                await anyio.to_thread.run_sync(retention.close)
            if ingestor is not None:
                await anyio.to_thread.run_sync(ingestor.stop)
            if orchestrator is not None:
                await anyio.to_thread.run_sync(orchestrator.stop)
            if owned:
                db.dispose()
            if master_log is not None:
                master_log.detach()

    app = _MasterApp(
        title="PEDL master",
        version=__version__,
        description="REST API of the PEDL master: experiments, trials, metrics, checkpoints.",
        lifespan=lifespan,
        generate_unique_id_function=_operation_id,
        # No OpenTelemetry here: FastAPI's per-request check for a configured provider cost
        # ~5% of the master's CPU under load (P5b).
        telemetry={"tracing": False, "metrics": False, "logs": False, "operation_spans": False},
    )
    app.state.settings = settings
    app.state.database = db
    app.state.metric_ingestor = ingestor
    app.state.orchestrator = orchestrator
    app.state.tensorboards = boards
    app.state.master_log = master_log
    tokens = app.state.token_cache = TokenCache(settings.token_cache_seconds)
    install_error_handlers(app)
    modules = (
        experiments,
        visualization,
        pareto,
        trials,
        trial_ops,
        system_metrics,
        checkpoints,
        downloads,
        cluster,
        master_info,
        health,
        users,
        templates,
        models,
        master_config,
        master_logs,
        cluster_message,
        experiment_ops,
        tensorboards,
        workspaces,
        projects,
    )
    read_routes = ReadRoutes(
        (route for m in modules for route in m.router.routes if isinstance(route, APIRoute)),
        prefix=API_PREFIX,
    )
    app.state.read_forwarding = forwarding
    front: ASGIApp = app.fastapi
    if reads_only:
        front = ReportCheckServer(ReadsOnly(front, routes=read_routes), dialect=db.dialect)
    if reads is not None and forwarding is not None:
        front = ReadForwarder(
            front,
            routes=read_routes,
            source=reads,
            forwarding=forwarding,
            revoked_lately=tokens.revoked_lately,
        )
    if ingestor is not None:
        checks = None
        if reads is not None and forwarding is not None:
            checks = ReportChecks(reads, forwarding, dialect=db.dialect)
        front = MetricReportFastPath(
            front, ingestor=ingestor, retry_after_s=settings.retry_after_seconds, checks=checks
        )
    body_auth = None  # a read process serves bodiless reads only (anything else: 404)
    authenticate = None
    if not reads_only:
        body_auth = BodyAuth(
            (route for m in modules for route in m.router.routes if isinstance(route, APIRoute)),
            prefix=API_PREFIX,
            database=db,
            tokens=tokens,
            settings=settings,
        )
        gate = app.state.tensorboard_gate = tensorboards.ProxyGate(
            auth=settings.auth, check_user=body_auth.user_refusal
        )
        authenticate = _callers(body_auth, gate)
    front = RequestLimits(  # before every route and fast path: caller, size, memory, JSON
        front,
        max_body=settings.max_request_bytes,
        max_upload=settings.upload_bytes,
        upload_path=f"{API_PREFIX}/experiments",
        max_json_depth=settings.max_json_depth,
        authenticate=authenticate,
        memory=BodyMemory(settings.upload_memory_bytes, reserve=settings.max_request_bytes),
        retry_after_s=settings.retry_after_seconds,
    )
    # The web UI's session cookie becomes a bearer token (or a CSRF 403, or a forged or
    # ended session's 401) before anything else looks at the caller.
    front = SessionCookies(
        front,
        prefix=API_PREFIX,
        public=PUBLIC_PATHS,
        check_user=None if body_auth is None else body_auth.user_refusal,
    )
    app.front = InFlightLimit(  # outermost: sheds before any other work
        front,
        limit=settings.max_requests_in_flight,
        user_slots=settings.user_request_slots,
        retry_after_s=settings.retry_after_seconds,
    )
    for module in modules:
        app.include_router(module.router, prefix=API_PREFIX)
    app.router.routes.extend(tensorboards.proxy_routes())  # TensorBoard, behind the sign-in
    app.router.routes.append(web_ui_route(ui_dir))  # last: every other route comes first
    return app
