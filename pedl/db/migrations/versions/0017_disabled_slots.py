"""Disabled agents and slots.

``disabled_slots`` holds ``det agent disable``'s and ``det slot disable``'s settings, kept
across restarts: one row per disabled slot of an agent (``slot_id`` -1: the whole agent), with
whether its trials drain. Enabling deletes the row; an existing database has none (everything
enabled).

Revision ID: 0017
Revises: 0016
Create Date: 2026-11-29
"""

from __future__ import annotations

from collections.abc import Sequence

import sqlalchemy as sa
from alembic import op

revision: str = "0017"
down_revision: str | None = "0016"
branch_labels: str | Sequence[str] | None = None
depends_on: str | Sequence[str] | None = None


def upgrade() -> None:
    op.create_table(
        "disabled_slots",
        sa.Column("agent_id", sa.String(length=128), nullable=False),
        sa.Column("slot_id", sa.Integer(), autoincrement=False, nullable=False),
        sa.Column("drain", sa.Boolean(), nullable=False),
        sa.Column("disabled_at", sa.DateTime(timezone=True), nullable=False),
        sa.Column("disabled_by", sa.String(length=128), nullable=False),
        sa.PrimaryKeyConstraint("agent_id", "slot_id", name=op.f("pk_disabled_slots")),
    )


def downgrade() -> None:
    op.drop_table("disabled_slots")
