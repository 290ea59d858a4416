"""Applying the Alembic migrations shipped in ``migrations/`` (no alembic.ini needed)."""

from __future__ import annotations

import logging
import threading
from contextlib import ExitStack
from pathlib import Path

from alembic import command
from alembic.config import Config
from alembic.runtime.migration import MigrationContext
from alembic.script import ScriptDirectory
from sqlalchemy import Connection, Engine

from pedl.master.db._engine import WRITE_OPTION

MIGRATIONS_DIR = Path(__file__).resolve().parent / "migrations"

_ALEMBIC_LOCK = threading.Lock()
"""Alembic's command API gives ``env.py`` its config through a process-global proxy
(``alembic.context``): two upgrades at once in one process (two masters served in one
process, local mode beside a master) would run on each other's connection and remove each
other's proxy. They take turns; the lock is taken before the database transaction begins, so
no thread waits for it while holding a database lock. An upgrade that waits longer than
:data:`ALEMBIC_LOCK_WAIT_S` (the other one is stuck, e.g. on a database lock) goes ahead without
it, with a warning, rather than stalling every later upgrade of the process."""
ALEMBIC_LOCK_WAIT_S = 5.0

logger = logging.getLogger("pedl.master.db")


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
    with ExitStack() as stack:
        if _ALEMBIC_LOCK.acquire(timeout=ALEMBIC_LOCK_WAIT_S):
            stack.callback(_ALEMBIC_LOCK.release)
        else:
            logger.warning(
                "another database migration in this process has not finished in %.0f s; "
                "migrating %s beside it",
                ALEMBIC_LOCK_WAIT_S,
                engine.url.render_as_string(hide_password=True),
            )
        with engine.execution_options(**{WRITE_OPTION: True}).begin() as connection:
            command.upgrade(alembic_config(connection), revision)


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
