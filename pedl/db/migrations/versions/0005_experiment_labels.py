"""What people write about an experiment: experiments.description and experiments.labels.

Existing experiments get theirs from their stored config (``description``, ``labels``).

Revision ID: 0005
Revises: 0004
Create Date: 2026-11-24
"""

from __future__ import annotations

import json
from collections.abc import Sequence

import sqlalchemy as sa
from alembic import op
from sqlalchemy.dialects import postgresql

revision: str = "0005"
down_revision: str | None = "0004"
branch_labels: str | Sequence[str] | None = None
depends_on: str | Sequence[str] | None = None

JSON = sa.JSON().with_variant(postgresql.JSONB(), "postgresql")


def upgrade() -> None:
    with op.batch_alter_table("experiments") as batch:
        batch.add_column(sa.Column("description", sa.Text(), nullable=True))
        batch.add_column(sa.Column("labels", JSON, nullable=False, server_default="[]"))
    experiments = sa.table(
        "experiments",
        sa.column("id", sa.Integer()),
        sa.column("config", JSON),
        sa.column("description", sa.Text()),
        sa.column("labels", JSON),
    )
    connection = op.get_bind()
    for experiment_id, config in connection.execute(
        sa.select(experiments.c.id, experiments.c.config)
    ):
        if isinstance(config, str):
            config = json.loads(config)
        description = config.get("description") if isinstance(config, dict) else None
        labels = config.get("labels") if isinstance(config, dict) else None
        if description is None and not labels:
            continue
        connection.execute(
            experiments.update()
            .where(experiments.c.id == experiment_id)
            .values(
                description=description if isinstance(description, str) else None,
                labels=[str(label) for label in labels] if isinstance(labels, list) else [],
            )
        )


def downgrade() -> None:
    with op.batch_alter_table("experiments") as batch:
        batch.drop_column("labels")
        batch.drop_column("description")
