"""Applying the Alembic migrations shipped in ``migrations/`` (no alembic.ini needed)."""

from __future__ import annotations

import logging
import threading
from pathlib import Path

from alembic import command
from alembic.config import Config
from alembic.runtime.migration import MigrationContext
from alembic.script import ScriptDirectory
from sqlalchemy import Connection, Engine

from pedl.db._engine import WRITE_OPTION

MIGRATIONS_DIR = Path(__file__).resolve().parent / "migrations"

_ALEMBIC_LOCK = threading.Lock()
"""Alembic's command API gives ``env.py`` and the migration scripts their config and ``op``
through process-global proxies (``alembic.context``, ``alembic.op``): two upgrades at once in
one process (two masters served in one process, local mode beside a master) would run on
each other's connection, and the first to finish removes the proxies under the other
(``KeyError: 'config'``, ``'NoneType' object has no attribute 'f'``). They take turns,
however long one takes: the lock is taken before the database transaction begins, so no
thread waits for it while holding a database lock. A wait longer than
:data:`ALEMBIC_LOCK_WARN_S` is logged."""
ALEMBIC_LOCK_WARN_S = 5.0

logger = logging.getLogger("pedl.db")


def alembic_config(connection: Connection | None = None) -> Config:
    """An Alembic config pointing at the packaged migrations; ``env.py`` runs them on
    ``connection`` (``config.attributes["connection"]``)."""
    config = Config()
    config.set_main_option("script_location", str(MIGRATIONS_DIR))
    config.attributes["connection"] = connection
    return config


def upgrade(engine: Engine, revision: str = "head") -> None:
    """Migrate the database behind ``engine`` to ``revision`` in one transaction.

    Idempotent: an up-to-date database is left untouched. Safe on an empty database. One
    upgrade at a time per process (see :data:`_ALEMBIC_LOCK`).
    """
    if not _ALEMBIC_LOCK.acquire(timeout=ALEMBIC_LOCK_WARN_S):
        logger.warning(
            "another database migration in this process has not finished in %.0f s; "
            "%s waits for it",
            ALEMBIC_LOCK_WARN_S,
            engine.url.render_as_string(hide_password=True),
        )
        _ALEMBIC_LOCK.acquire()
    try:
        if engine.dialect.name == "sqlite":
            _upgrade_sqlite(engine, revision)
        else:
            with engine.execution_options(**{WRITE_OPTION: True}).begin() as connection:
                command.upgrade(alembic_config(connection), revision)
    finally:
        _ALEMBIC_LOCK.release()


class ForeignKeyError(RuntimeError):
    """A migration left rows whose foreign keys name no row (nothing was committed)."""


def _upgrade_sqlite(engine: Engine, revision: str) -> None:
    """The upgrade on SQLite, with foreign keys off: a migration that rebuilds a table (copy,
    drop, rename: SQLite's only way to change most of a table) would otherwise delete the rows
    that name the dropped table (``ON DELETE CASCADE``) or fail. ``PRAGMA foreign_keys`` is
    read only outside a transaction, so it is set on the connection before the transaction
    begins, and set back after it; every foreign key is checked before the commit."""
    with engine.execution_options(**{WRITE_OPTION: True}).connect() as connection:
        raw = connection.connection.dbapi_connection
        assert raw is not None
        raw.execute("PRAGMA foreign_keys=OFF")
        try:
            with connection.begin():
                command.upgrade(alembic_config(connection), revision)
                broken = connection.exec_driver_sql("PRAGMA foreign_key_check").fetchall()
                if broken:
                    raise ForeignKeyError(
                        f"the migration to {revision} left rows with dangling foreign keys "
                        f"(table, rowid, parent, key): {[tuple(row) for row in broken[:10]]}"
                    )
        finally:
            raw.execute("PRAGMA foreign_keys=ON")


def current_revision(engine: Engine) -> str | None:
    """The revision the database is at, ``None`` when never migrated."""
    with engine.connect() as connection:
        return MigrationContext.configure(connection).get_current_revision()


def head_revision() -> str:
    """The newest revision shipped with this version of PEDL."""
    head = ScriptDirectory.from_config(alembic_config()).get_current_head()
    if head is None:
        raise RuntimeError(f"no migrations found in {MIGRATIONS_DIR}")
    return head
