"""The model registry (``det model``): models, model_versions; checkpoints registered in it
outlive their experiment (no foreign key from checkpoints to trials, ``detached``).

Revision ID: 0011
Revises: 0010
Create Date: 2026-11-26
"""

from __future__ import annotations

from collections.abc import Sequence

import sqlalchemy as sa
from alembic import op
from sqlalchemy.dialects import postgresql

revision: str = "0011"
down_revision: str | None = "0010"
branch_labels: str | Sequence[str] | None = None
depends_on: str | Sequence[str] | None = None

JSON = sa.JSON().with_variant(postgresql.JSONB(), "postgresql")


def _timestamps() -> list[sa.Column[object]]:
    return [
        sa.Column("created_at", sa.DateTime(timezone=True), nullable=False),
        sa.Column("updated_at", sa.DateTime(timezone=True), nullable=False),
    ]


def upgrade() -> None:
    with op.batch_alter_table("checkpoints") as batch:
        batch.drop_constraint("fk_checkpoints_trial_id_trials", type_="foreignkey")
        batch.add_column(sa.Column("detached", JSON, nullable=True))
    op.create_table(
        "models",
        sa.Column("id", sa.Integer(), nullable=False),
        sa.Column("name", sa.String(length=255), nullable=False),
        sa.Column("description", sa.Text(), nullable=False),
        sa.Column("notes", sa.Text(), nullable=False),
        sa.Column("labels", JSON, nullable=False),
        sa.Column("metadata", JSON, nullable=False),
        sa.Column("owner", sa.String(length=128), nullable=False),
        sa.Column("archived", sa.Boolean(), nullable=False),
        *_timestamps(),
        sa.PrimaryKeyConstraint("id", name=op.f("pk_models")),
        sa.UniqueConstraint("name", name=op.f("uq_models_name")),
    )
    op.create_table(
        "model_versions",
        sa.Column("id", sa.Integer(), nullable=False),
        sa.Column("model_id", sa.Integer(), nullable=False),
        sa.Column("version", sa.Integer(), nullable=False),
        sa.Column("checkpoint_uuid", sa.String(length=36), nullable=False),
        sa.Column("name", sa.String(length=255), nullable=True),
        sa.Column("comment", sa.Text(), nullable=False),
        sa.Column("notes", sa.Text(), nullable=False),
        sa.Column("labels", JSON, nullable=False),
        sa.Column("metadata", JSON, nullable=False),
        sa.Column("owner", sa.String(length=128), nullable=False),
        *_timestamps(),
        sa.ForeignKeyConstraint(
            ["model_id"],
            ["models.id"],
            name=op.f("fk_model_versions_model_id_models"),
            ondelete="CASCADE",
        ),
        sa.ForeignKeyConstraint(
            ["checkpoint_uuid"],
            ["checkpoints.uuid"],
            name=op.f("fk_model_versions_checkpoint_uuid_checkpoints"),
            ondelete="RESTRICT",
        ),
        sa.PrimaryKeyConstraint("id", name=op.f("pk_model_versions")),
        sa.UniqueConstraint("model_id", "version", name=op.f("uq_model_versions_model_id_version")),
    )
    op.create_index(
        op.f("ix_model_versions_model_id"), "model_versions", ["model_id"], unique=False
    )
    op.create_index(
        op.f("ix_model_versions_checkpoint_uuid"),
        "model_versions",
        ["checkpoint_uuid"],
        unique=False,
    )


def downgrade() -> None:
    op.drop_index(op.f("ix_model_versions_checkpoint_uuid"), table_name="model_versions")
    op.drop_index(op.f("ix_model_versions_model_id"), table_name="model_versions")
    op.drop_table("model_versions")
    op.drop_table("models")
    op.execute("DELETE FROM checkpoints WHERE trial_id NOT IN (SELECT id FROM trials)")
    with op.batch_alter_table("checkpoints") as batch:
        batch.drop_column("detached")
        batch.create_foreign_key(
            "fk_checkpoints_trial_id_trials", "trials", ["trial_id"], ["id"], ondelete="CASCADE"
        )
