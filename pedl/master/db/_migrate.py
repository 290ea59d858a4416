"""Applying the Alembic migrations shipped in ``migrations/`` (no alembic.ini needed)."""

from __future__ import annotations

from pathlib import Path

from alembic import command
from alembic.config import Config
from alembic.runtime.migration import MigrationContext
from alembic.script import ScriptDirectory
from sqlalchemy import Connection, Engine

from pedl.master.db._engine import WRITE_OPTION

MIGRATIONS_DIR = Path(__file__).resolve().parent / "migrations"


def alembic_config(connection: Connection | None = None) -> Config:
    """An Alembic config pointing at the packaged migrations; ``env.py`` runs them on
    ``connection`` (``config.attributes["connection"]``)."""
    config = Config()
    config.set_main_option("script_location", str(MIGRATIONS_DIR))
    config.attributes["connection"] = connection
    return config


def upgrade(engine: Engine, revision: str = "head") -> None:
    """Migrate the database behind ``engine`` to ``revision`` in one transaction.

    Idempotent: an up-to-date database is left untouched. Safe on an empty database.
    """
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
