"""The worker that wrote a trial's log line: trial_logs.rank (multi-worker trials).

Existing lines were written by one-process trials or the master: their rank stays NULL.

Revision ID: 0008
Revises: 0007
Create Date: 2026-11-26
"""

from __future__ import annotations

from collections.abc import Sequence

import sqlalchemy as sa
from alembic import op

revision: str = "0008"
down_revision: str | None = "0007"
branch_labels: str | Sequence[str] | None = None
depends_on: str | Sequence[str] | None = None


def upgrade() -> None:
    with op.batch_alter_table("trial_logs") as batch:
        batch.add_column(sa.Column("rank", sa.Integer(), nullable=True))


def downgrade() -> None:
    with op.batch_alter_table("trial_logs") as batch:
        batch.drop_column("rank")
