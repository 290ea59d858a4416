"""Experiment configs keep their key order: experiments.config becomes ``json`` on PostgreSQL.

``jsonb`` sorts an object's keys (by length, then bytes), so a config read back showed the
hyperparameters in another order than the user's. ``json`` stores the text as written. Every
value is kept; on PostgreSQL each existing config's mappings are put back in the order of the
submitted text (``experiments.config_text``) where it names the same keys (the keys it does
not name, defaults the master filled in, follow in their stored order). SQLite stored the
text all along: nothing changes there.

Revision ID: 0007
Revises: 0006
Create Date: 2026-11-26
"""

from __future__ import annotations

import json
from collections.abc import Sequence
from typing import Any

import sqlalchemy as sa
import yaml
from alembic import op
from sqlalchemy.dialects import postgresql

revision: str = "0007"
down_revision: str | None = "0006"
branch_labels: str | Sequence[str] | None = None
depends_on: str | Sequence[str] | None = None


def _in_order_of(stored: Any, written: Any) -> Any:
    """``stored`` with each mapping's keys in the order ``written`` (the parsed submitted
    text, at the same path) has them; keys ``written`` lacks keep their order, after."""
    if isinstance(stored, dict):
        guide = written if isinstance(written, dict) else {}
        first = [key for key in guide if isinstance(key, str) and key in stored]
        rest = [key for key in stored if key not in guide]
        return {key: _in_order_of(stored[key], guide.get(key)) for key in [*first, *rest]}
    if isinstance(stored, list) and isinstance(written, list) and len(stored) == len(written):
        return [_in_order_of(item, guide) for item, guide in zip(stored, written, strict=True)]
    if isinstance(stored, list):
        return [_in_order_of(item, None) for item in stored]
    return stored


def _written(config_text: str) -> Any:
    """The submitted text parsed (YAML, JSON being YAML), or ``None`` when it does not parse."""
    try:
        return yaml.safe_load(config_text)
    except Exception:  # an unreadable text only means the stored order stays
        return None


def upgrade() -> None:
    if op.get_bind().dialect.name != "postgresql":
        return
    op.alter_column(
        "experiments",
        "config",
        type_=sa.JSON(),
        existing_type=postgresql.JSONB(),
        existing_nullable=False,
        postgresql_using="config::json",
    )
    experiments = sa.table(
        "experiments",
        sa.column("id", sa.Integer()),
        sa.column("config", sa.JSON()),
        sa.column("config_text", sa.Text()),
    )
    connection = op.get_bind()
    rows = connection.execute(
        sa.select(experiments.c.id, experiments.c.config, experiments.c.config_text)
    ).all()
    for experiment_id, config, config_text in rows:
        if isinstance(config, str):
            config = json.loads(config)
        ordered = _in_order_of(config, _written(config_text or ""))
        if json.dumps(ordered) == json.dumps(config):
            continue
        connection.execute(
            experiments.update().where(experiments.c.id == experiment_id).values(config=ordered)
        )


def downgrade() -> None:
    if op.get_bind().dialect.name != "postgresql":
        return
    op.alter_column(
        "experiments",
        "config",
        type_=postgresql.JSONB(),
        existing_type=sa.JSON(),
        existing_nullable=False,
        postgresql_using="config::jsonb",
    )
