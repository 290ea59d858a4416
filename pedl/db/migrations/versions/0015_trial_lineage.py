"""Trial lineage (population-based training): trials.parent_trial_id, parent_batches and
changed_hparams.

A copy records the trial it copies, the batch of that trial's checkpoint it starts from
(the checkpoint itself is ``warm_start_checkpoint_uuid``) and the hyperparameters that
differ from its parent's. Every existing trial has no parent (NULL).

Revision ID: 0015
Revises: 0014
Create Date: 2026-11-29
"""

from __future__ import annotations

from collections.abc import Sequence

import sqlalchemy as sa
from alembic import op
from sqlalchemy.dialects import postgresql

revision: str = "0015"
down_revision: str | None = "0014"
branch_labels: str | Sequence[str] | None = None
depends_on: str | Sequence[str] | None = None

JSON = sa.JSON().with_variant(postgresql.JSONB(), "postgresql")


def upgrade() -> None:
    with op.batch_alter_table("trials") as batch:
        batch.add_column(sa.Column("parent_trial_id", sa.Integer(), nullable=True))
        batch.add_column(sa.Column("parent_batches", sa.BigInteger(), nullable=True))
        batch.add_column(sa.Column("changed_hparams", JSON, nullable=True))


def downgrade() -> None:
    with op.batch_alter_table("trials") as batch:
        batch.drop_column("changed_hparams")
        batch.drop_column("parent_batches")
        batch.drop_column("parent_trial_id")
