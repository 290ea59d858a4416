"""One object that owns the engine and hands out transactional sessions."""

from __future__ import annotations

import threading
from collections.abc import Iterator
from contextlib import ExitStack, contextmanager

from sqlalchemy import Engine
from sqlalchemy.orm import Session, sessionmaker

from pedl.db._engine import WRITE_OPTION, make_engine
from pedl.db._migrate import upgrade


class Database:
    """The master's database: an engine plus read and write session factories.

    Thread-safe; make one per process and share it (the API, the scheduler). ``pool_size``,
    ``pool_timeout`` and (SQLite) ``busy_timeout`` bound its connections and lock waits (see
    :func:`make_engine`; the master passes its settings' ``db_connections`` and
    ``db_pool_timeout``). Creating it opens no connection; :meth:`upgrade` applies the
    migrations. Sessions do not expire objects on commit, so rows stay readable after the
    ``with`` block.
    """

    def __init__(
        self,
        url: str,
        *,
        echo: bool = False,
        pool_size: int | None = None,
        pool_timeout: float | None = None,
        busy_timeout: float | None = None,
    ) -> None:
        self.url = url
        self.engine: Engine = make_engine(
            url,
            echo=echo,
            pool_size=pool_size,
            pool_timeout=pool_timeout,
            busy_timeout=busy_timeout,
        )
        self._read = sessionmaker(self.engine, expire_on_commit=False)
        self._write = sessionmaker(
            self.engine.execution_options(**{WRITE_OPTION: True}), expire_on_commit=False
        )
        self._writer = threading.Lock()

    @property
    def dialect(self) -> str:
        """``"sqlite"`` or ``"postgresql"``."""
        return self.engine.dialect.name

    @contextmanager
    def session(self, *, write: bool = False, serialize: bool = False) -> Iterator[Session]:
        """A session in one transaction: committed when the block ends, rolled back if it
        raises. Pass ``write=True`` when the block writes (on SQLite it then holds the write
        lock from the start, which avoids deadlock-style busy errors).

        ``serialize=True`` (with ``write``; no effect on PostgreSQL): the block also holds this
        object's writer lock, so this process's concurrent writers queue on a Python lock that
        passes at once to the next thread, instead of polling SQLite's lock with its busy
        handler (which sleeps up to 100 ms per try: under load that, not the work, is the
        latency). Use it only for blocks that run in one thread from start to end (never for a
        session held across a request's dependency teardown): a holder that must wait for a
        worker thread while the waiters occupy them all would deadlock.
        """
        factory = self._write if write else self._read
        with ExitStack() as stack:
            if write and serialize and self.dialect == "sqlite":
                stack.enter_context(self._writer)
            with factory() as session, session.begin():
                yield session

    def upgrade(self) -> None:
        """Apply all pending migrations (idempotent)."""
        upgrade(self.engine)

    def dispose(self) -> None:
        """Close every pooled connection."""
        self.engine.dispose()
