"""Request dependencies: the database and transactional sessions.

Sessions are function-scoped: the transaction commits after the handler returns and before
the response is sent, so a client never sees a success that was not stored.

A session holds its pooled connection from the handler's first query to its commit. The
session is opened on the event loop (no I/O: the connection is checked out at the first
query, in the handler's worker thread) and committed or rolled back on a small thread pool
of its own (:data:`TEARDOWN_THREADS`), not the handlers' one: under load, hundreds of
requests wait for a handler thread, and a finished handler must not wait behind them while
it holds a connection (the pool would run dry) or, on SQLite, the write lock.
"""

from __future__ import annotations

from collections.abc import AsyncGenerator
from contextlib import ExitStack
from typing import Annotated

import anyio
import anyio.to_thread
from anyio import CapacityLimiter
from anyio.lowlevel import RunVar
from fastapi import Depends, Query, Request
from fastapi import Path as PathParam
from sqlalchemy.orm import Session

from pedl.db import Database

MAX_INT_ID = 2**31 - 1


def get_database(request: Request) -> Database:
    """The app's :class:`Database` (created by ``create_app``)."""
    database = request.app.state.database
    assert isinstance(database, Database)
    return database


DatabaseDep = Annotated[Database, Depends(get_database)]


TEARDOWN_THREADS = 4
"""Threads that commit or roll back request sessions (see the module's docstring)."""

_teardown_limiter: RunVar[CapacityLimiter] = RunVar("pedl_session_teardown")


def _teardown() -> CapacityLimiter:
    try:
        return _teardown_limiter.get()
    except LookupError:
        limiter = CapacityLimiter(TEARDOWN_THREADS)
        _teardown_limiter.set(limiter)
        return limiter


async def _finish(stack: ExitStack, error: BaseException | None) -> None:
    """Commit (``error`` is None) or roll back, and close, on the teardown threads. Shielded:
    a request cancelled in its handler (its server shutting down) still rolls back and
    returns its connection; unshielded, anyio's first checkpoint would raise the
    cancellation again before the session closed, and the connection would stay checked
    out, on SQLite holding the write lock, until the garbage collector found it."""
    exc_info = (None, None, None) if error is None else (type(error), error, error.__traceback__)
    with anyio.CancelScope(shield=True):
        await anyio.to_thread.run_sync(lambda: stack.__exit__(*exc_info), limiter=_teardown())


async def read_session(database: DatabaseDep) -> AsyncGenerator[Session, None]:
    """A session for reading."""
    stack = ExitStack()
    session = stack.enter_context(database.session())  # no I/O until the first query
    try:
        yield session
    except BaseException as err:
        await _finish(stack, err)
        raise
    await _finish(stack, None)


async def write_session(database: DatabaseDep) -> AsyncGenerator[Session, None]:
    """A session that writes; committed when the handler returns, rolled back if it raises."""
    stack = ExitStack()
    session = stack.enter_context(database.session(write=True))  # no I/O until the first query
    try:
        yield session
    except BaseException as err:
        await _finish(stack, err)
        raise
    await _finish(stack, None)


ReadSession = Annotated[Session, Depends(read_session, scope="function")]
WriteSession = Annotated[Session, Depends(write_session, scope="function")]

ExperimentId = Annotated[int, PathParam(ge=1, le=MAX_INT_ID, description="Experiment id.")]
TrialId = Annotated[int, PathParam(ge=1, le=MAX_INT_ID, description="Trial id.")]
Limit = Annotated[int, Query(ge=1, le=1000, description="Page size.")]
Offset = Annotated[int, Query(ge=0, le=2**62, description="Items to skip.")]
