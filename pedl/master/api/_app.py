"""The FastAPI application factory."""

from __future__ import annotations

from collections.abc import AsyncIterator
from contextlib import asynccontextmanager

import anyio.to_thread
from fastapi import FastAPI
from fastapi.routing import APIRoute

from pedl import __version__
from pedl.master._settings import MasterSettings
from pedl.master.api import checkpoints, downloads, experiments, health, trial_ops, trials
from pedl.master.api._errors import install_error_handlers
from pedl.master.db import Database, MetricIngestor
from pedl.master.orchestrator import Orchestrator

API_PREFIX = "/api/v1"


def _operation_id(route: APIRoute) -> str:
    # Stable, readable operation ids for SDK generators: the handler's name (unique).
    return route.name


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
    answer 409.
    """
    owned = database is None
    db = Database(settings.db_url) if database is None else database
    ingestor = MetricIngestor(db)

    @asynccontextmanager
    async def lifespan(_app: FastAPI) -> AsyncIterator[None]:
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
    for module in (experiments, trials, trial_ops, checkpoints, downloads, health):
        app.include_router(module.router, prefix=API_PREFIX)
    return app
