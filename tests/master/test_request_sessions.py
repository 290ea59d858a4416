"""The request sessions of :mod:`pedl.master.api._deps`: a request cancelled inside its
handler (its server shutting down) still rolls its transaction back and returns its
connection, so no lock or pooled connection outlives it."""

from __future__ import annotations

import anyio
import anyio.to_thread
import pytest
from sqlalchemy import select

from pedl.db import Database, User
from pedl.master.api._deps import write_session


def test_a_cancelled_request_rolls_back_and_returns_its_connection(database: Database) -> None:
    async def request_cancelled_in_its_handler() -> None:
        sessions = write_session(database)
        session = await anext(sessions)
        # The handler writes (on SQLite this takes the write lock) in its worker thread.
        session.add(User(username="cancelled", password_hash="x"))
        await anyio.to_thread.run_sync(session.flush)
        assert database.engine.pool.checkedout() == 1  # type: ignore[attr-defined]
        with anyio.CancelScope() as scope:
            scope.cancel()
            try:
                await anyio.sleep(1)  # the cancellation arrives while the handler awaits
            except BaseException as cancelled:
                # What FastAPI does with a dependency's generator when its handler raises.
                with pytest.raises(type(cancelled)):
                    await sessions.athrow(cancelled)
                raise
        # Checked while the handler's session object still exists (as it does in a server
        # until the garbage collector finds it): closed, not merely unreachable.
        assert not session.in_transaction()
        assert database.engine.pool.checkedout() == 0  # type: ignore[attr-defined]

    anyio.run(request_cancelled_in_its_handler)
    # Rolled back, and the lock is free: another writer gets in at once.
    with database.session(write=True) as session:
        assert session.scalars(select(User).where(User.username == "cancelled")).all() == []
