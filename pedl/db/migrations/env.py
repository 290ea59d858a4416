"""Alembic environment: runs the migrations on the connection PEDL hands over.

PEDL calls Alembic programmatically (``pedl.db.upgrade``) and passes an open
connection in ``config.attributes["connection"]``; offline (SQL script) mode is not supported.
"""

from __future__ import annotations

from alembic import context
from sqlalchemy import Connection

from pedl.db._models import Base, exists_on


def run_migrations_online() -> None:
    """Run the pending migrations on the connection given by the caller."""
    connection = context.config.attributes.get("connection")
    if not isinstance(connection, Connection):
        raise RuntimeError(
            "PEDL migrations run through pedl.db.upgrade(engine), which passes a "
            "connection in config.attributes['connection']"
        )
    context.configure(
        connection=connection,
        target_metadata=Base.metadata,
        render_as_batch=True,  # SQLite needs table rebuilds for most ALTERs
        compare_type=True,
        include_object=exists_on(connection.dialect.name),
    )
    with context.begin_transaction():
        context.run_migrations()


if context.is_offline_mode():
    raise RuntimeError("offline migrations are not supported; use pedl.db.upgrade")
run_migrations_online()
