"""Initial schema: experiments, model definitions, trials, metrics, checkpoints, logs, searcher.

Revision ID: 0001
Revises:
Create Date: 2026-11-22

Written to stand alone: column types are spelled out here rather than imported from the
models, so later model changes never alter what this revision creates.
"""

from __future__ import annotations

from collections.abc import Sequence

import sqlalchemy as sa
from alembic import op
from sqlalchemy.dialects import postgresql

revision: str = "0001"
down_revision: str | None = None
branch_labels: str | Sequence[str] | None = None
depends_on: str | Sequence[str] | None = None

JSON = sa.JSON().with_variant(postgresql.JSONB(), "postgresql")
BIGINT_PK = sa.BigInteger().with_variant(sa.Integer(), "sqlite")


def _timestamp(name: str, *, nullable: bool = False) -> sa.Column[object]:
    return sa.Column(name, sa.DateTime(timezone=True), nullable=nullable)


def _state(name: str) -> sa.Column[str]:
    return sa.Column(name, sa.String(length=32), nullable=False)


def upgrade() -> None:
    op.create_table(
        "experiments",
        sa.Column("id", sa.Integer(), nullable=False),
        sa.Column("name", sa.String(length=512), nullable=True),
        sa.Column("config", JSON, nullable=False),
        sa.Column("config_text", sa.Text(), nullable=False),
        sa.Column("owner", sa.String(length=128), nullable=False),
        _state("state"),
        sa.Column("progress", sa.Float(), nullable=False),
        sa.Column("searcher_metric", sa.String(length=256), nullable=True),
        sa.Column("smaller_is_better", sa.Boolean(), nullable=False),
        _timestamp("created_at"),
        _timestamp("ended_at", nullable=True),
        sa.PrimaryKeyConstraint("id", name=op.f("pk_experiments")),
    )
    op.create_index(op.f("ix_experiments_state"), "experiments", ["state"])

    op.create_table(
        "model_definitions",
        sa.Column("experiment_id", sa.Integer(), nullable=False),
        sa.Column("archive", sa.LargeBinary(), nullable=False),
        sa.Column("size", sa.BigInteger(), nullable=False),
        sa.Column("sha256", sa.String(length=64), nullable=False),
        sa.ForeignKeyConstraint(
            ["experiment_id"],
            ["experiments.id"],
            name=op.f("fk_model_definitions_experiment_id_experiments"),
            ondelete="CASCADE",
        ),
        sa.PrimaryKeyConstraint("experiment_id", name=op.f("pk_model_definitions")),
    )

    op.create_table(
        "searcher_events",
        sa.Column("id", BIGINT_PK, autoincrement=True, nullable=False),
        sa.Column("experiment_id", sa.Integer(), nullable=False),
        sa.Column("seq", sa.BigInteger(), nullable=False),
        sa.Column("event", JSON, nullable=False),
        _timestamp("created_at"),
        sa.ForeignKeyConstraint(
            ["experiment_id"],
            ["experiments.id"],
            name=op.f("fk_searcher_events_experiment_id_experiments"),
            ondelete="CASCADE",
        ),
        sa.PrimaryKeyConstraint("id", name=op.f("pk_searcher_events")),
        sa.UniqueConstraint(
            "experiment_id", "seq", name=op.f("uq_searcher_events_experiment_id_seq")
        ),
    )

    op.create_table(
        "searcher_snapshots",
        sa.Column("experiment_id", sa.Integer(), nullable=False),
        sa.Column("event_seq", sa.BigInteger(), nullable=False),
        sa.Column("state", JSON, nullable=False),
        _timestamp("updated_at"),
        sa.ForeignKeyConstraint(
            ["experiment_id"],
            ["experiments.id"],
            name=op.f("fk_searcher_snapshots_experiment_id_experiments"),
            ondelete="CASCADE",
        ),
        sa.PrimaryKeyConstraint("experiment_id", name=op.f("pk_searcher_snapshots")),
    )

    op.create_table(
        "trials",
        sa.Column("id", sa.Integer(), nullable=False),
        sa.Column("experiment_id", sa.Integer(), nullable=False),
        sa.Column("request_id", sa.String(length=64), nullable=True),
        sa.Column("hparams", JSON, nullable=False),
        sa.Column("seed", sa.BigInteger(), nullable=False),
        _state("state"),
        sa.Column("restarts", sa.Integer(), nullable=False),
        sa.Column("total_batches", sa.BigInteger(), nullable=False),
        sa.Column("latest_checkpoint_uuid", sa.String(length=36), nullable=True),
        sa.Column("best_checkpoint_uuid", sa.String(length=36), nullable=True),
        sa.Column("best_validation", sa.Float(), nullable=True),
        sa.Column("token_hash", sa.String(length=64), nullable=False),
        _timestamp("created_at"),
        _timestamp("ended_at", nullable=True),
        sa.ForeignKeyConstraint(
            ["experiment_id"],
            ["experiments.id"],
            name=op.f("fk_trials_experiment_id_experiments"),
            ondelete="CASCADE",
        ),
        sa.PrimaryKeyConstraint("id", name=op.f("pk_trials")),
        sa.UniqueConstraint(
            "experiment_id", "request_id", name=op.f("uq_trials_experiment_id_request_id")
        ),
        sa.UniqueConstraint("token_hash", name=op.f("uq_trials_token_hash")),
    )
    op.create_index(op.f("ix_trials_experiment_id"), "trials", ["experiment_id"])
    op.create_index(op.f("ix_trials_state"), "trials", ["state"])

    op.create_table(
        "checkpoints",
        sa.Column("id", sa.Integer(), nullable=False),
        sa.Column("uuid", sa.String(length=36), nullable=False),
        sa.Column("trial_id", sa.Integer(), nullable=False),
        sa.Column("total_batches", sa.BigInteger(), nullable=False),
        _state("state"),
        sa.Column("metadata", JSON, nullable=False),
        sa.Column("resources", JSON, nullable=False),
        _timestamp("created_at"),
        sa.ForeignKeyConstraint(
            ["trial_id"],
            ["trials.id"],
            name=op.f("fk_checkpoints_trial_id_trials"),
            ondelete="CASCADE",
        ),
        sa.PrimaryKeyConstraint("id", name=op.f("pk_checkpoints")),
        sa.UniqueConstraint("uuid", name=op.f("uq_checkpoints_uuid")),
    )
    op.create_index(op.f("ix_checkpoints_trial_id"), "checkpoints", ["trial_id"])

    op.create_table(
        "metrics",
        sa.Column("id", BIGINT_PK, autoincrement=True, nullable=False),
        sa.Column("trial_id", sa.Integer(), nullable=False),
        _state("kind"),
        sa.Column("total_batches", sa.BigInteger(), nullable=False),
        sa.Column("total_records", sa.BigInteger(), nullable=True),
        sa.Column("total_epochs", sa.Float(), nullable=True),
        sa.Column("metrics", JSON, nullable=False),
        _timestamp("reported_at"),
        sa.ForeignKeyConstraint(
            ["trial_id"], ["trials.id"], name=op.f("fk_metrics_trial_id_trials"), ondelete="CASCADE"
        ),
        sa.PrimaryKeyConstraint("id", name=op.f("pk_metrics")),
        sa.UniqueConstraint(
            "trial_id",
            "kind",
            "total_batches",
            name=op.f("uq_metrics_trial_id_kind_total_batches"),
        ),
    )

    op.create_table(
        "trial_logs",
        sa.Column("id", BIGINT_PK, autoincrement=True, nullable=False),
        sa.Column("trial_id", sa.Integer(), nullable=False),
        sa.Column("seq", sa.BigInteger(), nullable=False),
        sa.Column("message", sa.Text(), nullable=False),
        sa.Column("level", sa.String(length=16), nullable=True),
        sa.Column("stream", sa.String(length=16), nullable=True),
        _timestamp("timestamp", nullable=True),
        sa.ForeignKeyConstraint(
            ["trial_id"],
            ["trials.id"],
            name=op.f("fk_trial_logs_trial_id_trials"),
            ondelete="CASCADE",
        ),
        sa.PrimaryKeyConstraint("id", name=op.f("pk_trial_logs")),
        sa.UniqueConstraint("trial_id", "seq", name=op.f("uq_trial_logs_trial_id_seq")),
    )


def downgrade() -> None:
    for table in (
        "trial_logs",
        "metrics",
        "checkpoints",
        "trials",
        "searcher_snapshots",
        "searcher_events",
        "model_definitions",
        "experiments",
    ):
        op.drop_table(table)
