"""The FastAPI application factory, and its sizing and load shedding.

Sizing (from :class:`MasterSettings`): the database pool holds at most ``db_connections``
connections (``max_db_connections``; default 16 on SQLite, 20 on PostgreSQL; no overflow) and
a checkout waits ``db_pool_timeout`` seconds; blocking handlers run on ``worker_threads``
threads (``api_threads``; default ``db_connections - 4``, so every worker thread can hold a
connection while the metric writer and the orchestrator keep theirs). Metric reports need no
worker thread (the route awaits the group-commit writer).

Shedding, always 503 with ``Retry-After`` (``retry_after_seconds``) and the standard error
body: more than ``max_requests_in_flight`` requests being served (:class:`InFlightLimit`),
no free connection within ``db_pool_timeout``, a database lock or connection refused (see
:mod:`._errors`), more than ``max_queued_reports`` reports waiting for the metric writer.
"""

from __future__ import annotations

from collections.abc import AsyncIterator
from contextlib import asynccontextmanager

import anyio.to_thread
from fastapi import FastAPI
from fastapi.routing import APIRoute
from starlette.types import ASGIApp, Receive, Scope, Send

from pedl import __version__
from pedl.master._settings import MasterSettings
from pedl.master.api import checkpoints, downloads, experiments, health, trial_ops, trials
from pedl.master.api._errors import error_response, install_error_handlers
from pedl.master.db import Database, MetricIngestor
from pedl.master.orchestrator import Orchestrator

API_PREFIX = "/api/v1"


def _operation_id(route: APIRoute) -> str:
    # Stable, readable operation ids for SDK generators: the handler's name (unique).
    return route.name


class InFlightLimit:
    """ASGI middleware: at most ``limit`` HTTP requests are served at once; the next ones are
    answered 503 with ``Retry-After`` at once, without reading their bodies (the health check
    is always served). A counter, no lock: the event loop is one thread."""

    def __init__(self, app: ASGIApp, *, limit: int, retry_after_s: int) -> None:
        self.app = app
        self.limit = limit
        self.retry_after_s = retry_after_s
        self.in_flight = 0
        self.shed = 0

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
            await self.app(scope, receive, send)
        finally:
            self.in_flight -= 1


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
) -> FastAPI:
    """Build the master's REST API (OpenAPI at ``/docs`` and ``/openapi.json``).

    Creating the app opens no connection. On startup it creates ``settings.home`` and applies
    the database migrations; on shutdown it disposes the engine. Pass ``database`` to share one
    :class:`Database` with other parts of the master (the caller then disposes it); otherwise
    one is made from ``settings.db_url``. The metric writer (:class:`MetricIngestor`, group
    commit of ``POST /trials/{id}/metrics``) starts after the migrations and, on shutdown,
    writes what is queued and stops before the orchestrator and the engine. With an
    ``orchestrator`` (built on the same ``database``) the app runs experiments: the
    orchestrator starts after the migrations and stops (killing its trial processes) before
    the engine is disposed; without one it is an API-only master whose trial-operation routes
    answer 409. On startup the worker-thread limit is set to ``settings.worker_threads``; see
    the module's docstring for the sizing and the load shedding.
    """
    owned = database is None
    db = make_database(settings) if database is None else database
    ingestor = MetricIngestor(db, max_queued=settings.max_queued_reports)

    @asynccontextmanager
    async def lifespan(_app: FastAPI) -> AsyncIterator[None]:
        anyio.to_thread.current_default_thread_limiter().total_tokens = settings.worker_threads
        settings.home.mkdir(parents=True, exist_ok=True)
        await anyio.to_thread.run_sync(db.upgrade)
        ingestor.start()
        if orchestrator is not None:
            await anyio.to_thread.run_sync(orchestrator.start)
        try:
            yield
        finally:
            await anyio.to_thread.run_sync(ingestor.stop)
            if orchestrator is not None:
                await anyio.to_thread.run_sync(orchestrator.stop)
            if owned:
                db.dispose()

    app = FastAPI(
        title="PEDL master",
        version=__version__,
        description="REST API of the PEDL master: experiments, trials, metrics, checkpoints.",
        lifespan=lifespan,
        generate_unique_id_function=_operation_id,
    )
    app.state.settings = settings
    app.state.database = db
    app.state.metric_ingestor = ingestor
    app.state.orchestrator = orchestrator
    install_error_handlers(app)
    app.add_middleware(
        InFlightLimit,
        limit=settings.max_requests_in_flight,
        retry_after_s=settings.retry_after_seconds,
    )
    for module in (experiments, trials, trial_ops, checkpoints, downloads, health):
        app.include_router(module.router, prefix=API_PREFIX)
    return app
