"""Experiment and trial ids are never reused on SQLite: their tables become AUTOINCREMENT.

Without it SQLite gives a new row the largest id plus one, so deleting the newest experiment
let the next one take its id (Determined never reuses one; PostgreSQL's sequences never do:
nothing to change there). SQLite cannot add AUTOINCREMENT to a table, so both are rebuilt
(Alembic's batch copy: same columns, constraints, indexes and rows). The rebuild drops the old
tables, which the other tables' foreign keys name: :func:`pedl.db.upgrade` runs SQLite's
migrations with foreign keys off, and checks them all (``PRAGMA foreign_key_check``) before it
commits. The ids given before the migration to rows deleted before it are not known; every id
given from here on is never given again.

Revision ID: 0013
Revises: 0012
Create Date: 2026-11-29
"""

from __future__ import annotations

from collections.abc import Sequence

from alembic import op

revision: str = "0013"
down_revision: str | None = "0012"
branch_labels: str | Sequence[str] | None = None
depends_on: str | Sequence[str] | None = None

TABLES = ("experiments", "trials")


def _rebuild(autoincrement: bool) -> None:
    if op.get_bind().dialect.name != "sqlite":
        return
    for table in TABLES:
        with op.batch_alter_table(
            table, recreate="always", table_kwargs={"sqlite_autoincrement": autoincrement}
        ):
            pass


def upgrade() -> None:
    _rebuild(autoincrement=True)


def downgrade() -> None:
    _rebuild(autoincrement=False)
