"""Warm starts: trials.warm_start_checkpoint_uuid.

Revision ID: 0003
Revises: 0002
Create Date: 2026-11-23
"""

from __future__ import annotations

from collections.abc import Sequence

import sqlalchemy as sa
from alembic import op

revision: str = "0003"
down_revision: str | None = "0002"
branch_labels: str | Sequence[str] | None = None
depends_on: str | Sequence[str] | None = None


def upgrade() -> None:
    with op.batch_alter_table("trials") as batch:
        batch.add_column(
            sa.Column("warm_start_checkpoint_uuid", sa.String(length=36), nullable=True)
        )


def downgrade() -> None:
    with op.batch_alter_table("trials") as batch:
        batch.drop_column("warm_start_checkpoint_uuid")
