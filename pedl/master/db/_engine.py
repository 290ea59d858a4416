"""Creating a configured SQLAlchemy engine for SQLite or PostgreSQL."""

from __future__ import annotations

from pathlib import Path
from typing import Any

from sqlalchemy import Engine, create_engine, event
from sqlalchemy.engine import URL, Connection, make_url
from sqlalchemy.pool import ConnectionPoolEntry

WRITE_OPTION = "pedl_write"
"""Execution option marking a connection whose transactions will write.

On SQLite such transactions start with ``BEGIN IMMEDIATE``: they take the write lock up
front and wait for it (busy timeout) instead of failing when a reader upgrades to a writer.
PostgreSQL ignores it.
"""

SQLITE_BUSY_TIMEOUT_MS = 30_000


def normalize_url(url: str | URL) -> URL:
    """Parse ``url`` and pick our drivers: ``postgresql://`` and ``postgres://`` become
    ``postgresql+psycopg://`` (psycopg 3). Raises ``ValueError`` for any other backend."""
    parsed = make_url(url)
    backend = parsed.get_backend_name()
    if backend in ("postgresql", "postgres"):
        if parsed.drivername in ("postgresql", "postgres"):
            parsed = parsed.set(drivername="postgresql+psycopg")
    elif backend != "sqlite":
        raise ValueError(f"unsupported database {parsed.drivername!r}: use sqlite or postgresql")
    return parsed


def make_engine(url: str | URL, *, echo: bool = False) -> Engine:
    """Create an engine for ``url`` (no connection is made yet).

    SQLite: every connection gets WAL journaling, ``synchronous=NORMAL``, foreign keys on and
    a busy timeout; the directory of the database file is created if missing; transactions are
    begun explicitly (see :data:`WRITE_OPTION`). PostgreSQL: psycopg 3 with pre-ping.
    """
    parsed = normalize_url(url)
    if parsed.get_backend_name() == "postgresql":
        return create_engine(parsed, echo=echo, pool_pre_ping=True, pool_size=10, max_overflow=20)
    database = parsed.database
    if database and database != ":memory:" and not database.startswith("file:"):
        Path(database).expanduser().parent.mkdir(parents=True, exist_ok=True)
    engine = create_engine(
        parsed,
        echo=echo,
        connect_args={"timeout": SQLITE_BUSY_TIMEOUT_MS / 1000, "check_same_thread": False},
    )
    event.listen(engine, "connect", _on_sqlite_connect)
    event.listen(engine, "begin", _on_sqlite_begin)
    return engine


def _on_sqlite_connect(dbapi_connection: Any, _record: ConnectionPoolEntry) -> None:
    # Hand transaction control to SQLAlchemy (the "begin" hook below) instead of the
    # sqlite3 module's implicit, DML-only transactions.
    dbapi_connection.isolation_level = None
    cursor = dbapi_connection.cursor()
    try:
        cursor.execute("PRAGMA journal_mode=WAL")
        cursor.execute("PRAGMA synchronous=NORMAL")
        cursor.execute("PRAGMA foreign_keys=ON")
        cursor.execute(f"PRAGMA busy_timeout={SQLITE_BUSY_TIMEOUT_MS}")
    finally:
        cursor.close()


def _on_sqlite_begin(connection: Connection) -> None:
    if connection.get_execution_options().get(WRITE_OPTION):
        connection.exec_driver_sql("BEGIN IMMEDIATE")
    else:
        connection.exec_driver_sql("BEGIN")
