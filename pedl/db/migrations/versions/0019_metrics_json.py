"""Metric rows' documents as ``json`` on PostgreSQL.

``metrics.metrics`` was ``jsonb``: PostgreSQL parsed every reported row into its binary form
and sorted its keys, a third of its server's CPU per stored row (14.3 against 9.7 µs for
P5a's rows of two metrics: bench/p5g_pg_document_type.py, bench/RESULTS.md "P5a,
2026-12-03"). As ``json`` it keeps the text as reported (as SQLite does) and the readers
take a value out with ``->>`` and ``json_typeof``. Existing rows are converted in place (the
table is rewritten once). SQLite: nothing to do (its JSON is text).

Revision ID: 0019
Revises: 0018
Create Date: 2026-12-03
"""

from __future__ import annotations

from collections.abc import Sequence

from alembic import op

revision: str = "0019"
down_revision: str | None = "0018"
branch_labels: str | Sequence[str] | None = None
depends_on: str | Sequence[str] | None = None


def upgrade() -> None:
    if op.get_bind().dialect.name == "postgresql":
        op.execute("ALTER TABLE metrics ALTER COLUMN metrics TYPE json USING metrics::json")


def downgrade() -> None:
    if op.get_bind().dialect.name == "postgresql":
        op.execute("ALTER TABLE metrics ALTER COLUMN metrics TYPE jsonb USING metrics::jsonb")
