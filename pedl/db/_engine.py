"""Creating a configured SQLAlchemy engine for SQLite or PostgreSQL."""

from __future__ import annotations

import contextlib
import functools
import os
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
DEFAULT_POOL_SIZE = {"sqlite": 16, "postgresql": 20}
DEFAULT_POOL_TIMEOUT_S = 2.0
SQLITE_LARGE_BIND_BYTES = 1 << 20
"""A pooled SQLite connection that bound a value at least this large (a model definition's
archive) is closed when it returns to the pool (:func:`_forget_large_binds`)."""
_LARGE_BIND = "pedl_large_bind"


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


def make_engine(
    url: str | URL,
    *,
    echo: bool = False,
    pool_size: int | None = None,
    pool_timeout: float | None = None,
    busy_timeout: float | None = None,
) -> Engine:
    """Create an engine for ``url`` (no connection is made yet).

    The pool holds at most ``pool_size`` connections (no overflow: default 16 for SQLite, 20
    for PostgreSQL) and a checkout waits at most ``pool_timeout`` seconds (default 2) before
    raising ``sqlalchemy.exc.TimeoutError``, which the API answers with 503 + Retry-After.
    SQLite: every connection gets WAL journaling, ``synchronous=NORMAL``, foreign keys on and
    a busy timeout (``busy_timeout`` seconds, default 30: how long a write waits for the lock
    before "database is locked", which the API answers 503); the database file and its
    missing directories are created private (:func:`create_private_file`); transactions
    are begun explicitly (see :data:`WRITE_OPTION`);
    an in-memory database keeps SQLAlchemy's own pool. PostgreSQL: psycopg 3 with pre-ping.
    """
    parsed = normalize_url(url)
    backend = parsed.get_backend_name()
    pool: dict[str, Any] = {
        "pool_size": DEFAULT_POOL_SIZE[backend] if pool_size is None else pool_size,
        "max_overflow": 0,
        "pool_timeout": DEFAULT_POOL_TIMEOUT_S if pool_timeout is None else pool_timeout,
    }
    if backend == "postgresql":
        return create_engine(parsed, echo=echo, pool_pre_ping=True, **pool)
    database = parsed.database
    on_disk = bool(database) and database != ":memory:" and not str(database).startswith("file:")
    if on_disk:
        create_private_file(Path(str(database)).expanduser())
    busy_ms = SQLITE_BUSY_TIMEOUT_MS if busy_timeout is None else round(busy_timeout * 1000)
    engine = create_engine(
        parsed,
        echo=echo,
        connect_args={"timeout": busy_ms / 1000, "check_same_thread": False},
        **(pool if on_disk else {}),
    )
    event.listen(engine, "connect", functools.partial(_on_sqlite_connect, busy_ms))
    event.listen(engine, "begin", _on_sqlite_begin)
    if on_disk:
        _forget_large_binds(engine)
    return engine


PRIVATE_DIR_MODE = 0o700
PRIVATE_FILE_MODE = 0o600


def make_private_dirs(directory: Path) -> None:
    """Create ``directory`` and its missing parents, each with mode 0700 (whatever the
    umask); directories that exist are left as they are."""
    missing: list[Path] = []
    while not os.path.lexists(directory) and directory != directory.parent:
        missing.append(directory)
        directory = directory.parent
    for path in reversed(missing):
        with contextlib.suppress(FileExistsError):
            os.mkdir(path, PRIVATE_DIR_MODE)


def create_private_file(path: Path) -> None:
    """Create the SQLite database file ``path``, empty, readable and writable by this user
    only (0600), and its missing directories (0700), unless it exists. SQLite gives the
    ``-wal``, ``-shm`` and ``-journal`` files it creates beside it the database file's mode
    (whatever the umask), so they are private too."""
    make_private_dirs(path.parent)
    try:
        fd = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_EXCL | os.O_CLOEXEC, PRIVATE_FILE_MODE)
    except FileExistsError:
        return
    os.close(fd)


def _forget_large_binds(engine: Engine) -> None:
    """Close a pooled SQLite connection, when it returns to the pool, once a statement of it
    (not an ``executemany`` batch) has bound a byte string of :data:`SQLITE_LARGE_BIND_BYTES`
    or more; the next checkout opens a new one.

    The ``sqlite3`` module keeps each connection's statements in a cache, and SQLite keeps a
    statement's bound values (copies) until it is bound again: without this, every connection
    that inserted a model definition held a copy of the archive for as long as it lived, up
    to a pool's worth of archives (16 of up to 96 MiB each) that never went back to the system.
    """

    def note(
        conn: Connection,
        _cursor: Any,
        _statement: str,
        parameters: Any,
        _context: Any,
        executemany: bool,
    ) -> None:
        if executemany or not parameters:  # batches (metric rows) are made of small values
            return
        values = parameters.values() if isinstance(parameters, dict) else parameters
        if any(
            isinstance(value, bytes | bytearray | memoryview)
            and len(value) >= SQLITE_LARGE_BIND_BYTES
            for value in values
        ):
            conn.connection.info[_LARGE_BIND] = True

    def checkin(_dbapi_connection: Any, record: ConnectionPoolEntry) -> None:
        if record.info.pop(_LARGE_BIND, False):
            record.invalidate()

    event.listen(engine, "before_cursor_execute", note)
    event.listen(engine.pool, "checkin", checkin)


def _on_sqlite_connect(busy_ms: int, dbapi_connection: Any, _record: ConnectionPoolEntry) -> None:
    # Hand transaction control to SQLAlchemy (the "begin" hook below) instead of the
    # sqlite3 module's implicit, DML-only transactions.
    dbapi_connection.isolation_level = None
    cursor = dbapi_connection.cursor()
    try:
        cursor.execute("PRAGMA journal_mode=WAL")
        cursor.execute("PRAGMA synchronous=NORMAL")
        cursor.execute("PRAGMA foreign_keys=ON")
        cursor.execute(f"PRAGMA busy_timeout={busy_ms}")
    finally:
        cursor.close()


def _on_sqlite_begin(connection: Connection) -> None:
    if connection.get_execution_options().get(WRITE_OPTION):
        connection.exec_driver_sql("BEGIN IMMEDIATE")
    else:
        connection.exec_driver_sql("BEGIN")
