"""Experiment notes and log retention; the cluster-wide message.

``experiments.notes`` (Determined's ``Experiment.notes``, ``set_notes``) and
``experiments.log_retention_days`` (``det e set log-retention``: days its trials' logs are
kept after it ends; -1 or NULL: forever) are NULL for every existing experiment.
``cluster_messages`` holds ``det master cluster-message``'s messages, the current one and the
ended ones.

Revision ID: 0016
Revises: 0015
Create Date: 2026-11-29
"""

from __future__ import annotations

from collections.abc import Sequence

import sqlalchemy as sa
from alembic import op

revision: str = "0016"
down_revision: str | None = "0015"
branch_labels: str | Sequence[str] | None = None
depends_on: str | Sequence[str] | None = None


def upgrade() -> None:
    with op.batch_alter_table("experiments", table_kwargs={"sqlite_autoincrement": True}) as batch:
        batch.add_column(sa.Column("notes", sa.Text(), nullable=True))
        batch.add_column(sa.Column("log_retention_days", sa.Integer(), nullable=True))
    op.create_table(
        "cluster_messages",
        sa.Column("id", sa.Integer(), nullable=False),
        sa.Column("message", sa.Text(), nullable=False),
        sa.Column("start_time", sa.DateTime(timezone=True), nullable=False),
        sa.Column("end_time", sa.DateTime(timezone=True), nullable=True),
        sa.Column("created_at", sa.DateTime(timezone=True), nullable=False),
        sa.Column("created_by", sa.String(length=128), nullable=False),
        sa.PrimaryKeyConstraint("id", name=op.f("pk_cluster_messages")),
    )


def downgrade() -> None:
    op.drop_table("cluster_messages")
    with op.batch_alter_table("experiments", table_kwargs={"sqlite_autoincrement": True}) as batch:
        batch.drop_column("log_retention_days")
        batch.drop_column("notes")
