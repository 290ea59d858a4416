"""The dialect's INSERT construct, for ``ON CONFLICT`` upserts on SQLite and PostgreSQL alike."""

from __future__ import annotations

from sqlalchemy import Table
from sqlalchemy.dialects import postgresql, sqlite
from sqlalchemy.orm import Session


def dialect_insert(session: Session, table: Table) -> sqlite.Insert | postgresql.Insert:
    """``INSERT INTO table`` built with the bound dialect's construct, which offers
    ``on_conflict_do_update`` / ``on_conflict_do_nothing`` with the same signature on both."""
    name = session.get_bind().dialect.name
    if name == "postgresql":
        return postgresql.insert(table)
    if name == "sqlite":
        return sqlite.insert(table)
    raise ValueError(f"unsupported database dialect {name!r}")
