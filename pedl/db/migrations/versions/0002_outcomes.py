"""Typed trial outcomes and failure reasons: trials.outcome, trials.error, experiments.error.

Revision ID: 0002
Revises: 0001
Create Date: 2026-11-23
"""

from __future__ import annotations

from collections.abc import Sequence

import sqlalchemy as sa
from alembic import op
from sqlalchemy.dialects import postgresql

revision: str = "0002"
down_revision: str | None = "0001"
branch_labels: str | Sequence[str] | None = None
depends_on: str | Sequence[str] | None = None

JSON = sa.JSON().with_variant(postgresql.JSONB(), "postgresql")


def upgrade() -> None:
    with op.batch_alter_table("trials") as batch:
        batch.add_column(sa.Column("outcome", sa.String(length=32), nullable=True))
        batch.add_column(sa.Column("error", JSON, nullable=True))
    with op.batch_alter_table("experiments") as batch:
        batch.add_column(sa.Column("error", sa.Text(), nullable=True))


def downgrade() -> None:
    with op.batch_alter_table("experiments") as batch:
        batch.drop_column("error")
    with op.batch_alter_table("trials") as batch:
        batch.drop_column("error")
        batch.drop_column("outcome")
