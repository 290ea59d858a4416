"""Workspaces and projects (Determined's): every experiment belongs to a project.

Creates ``workspaces`` and ``projects`` with the default workspace ``Uncategorized`` (id 1)
and its default project ``Uncategorized`` (id 1, key ``UNC``), both immutable, and gives
``experiments`` a ``project_id`` (default 1): every existing experiment lands in the default
project. On SQLite the experiments table is rebuilt to add the foreign key (Alembic's batch
copy, keeping AUTOINCREMENT: ids are still never reused).

Revision ID: 0014
Revises: 0013
Create Date: 2026-11-29
"""

from __future__ import annotations

from collections.abc import Sequence
from datetime import UTC, datetime

import sqlalchemy as sa
from alembic import op

revision: str = "0014"
down_revision: str | None = "0013"
branch_labels: str | Sequence[str] | None = None
depends_on: str | Sequence[str] | None = None


def upgrade() -> None:
    workspaces = op.create_table(
        "workspaces",
        sa.Column("id", sa.Integer(), nullable=False),
        sa.Column("name", sa.String(length=128), nullable=False),
        sa.Column("archived", sa.Boolean(), nullable=False),
        sa.Column("immutable", sa.Boolean(), nullable=False),
        sa.Column("owner", sa.String(length=128), nullable=False),
        sa.Column("created_at", sa.DateTime(timezone=True), nullable=False),
        sa.PrimaryKeyConstraint("id", name=op.f("pk_workspaces")),
        sa.UniqueConstraint("name", name=op.f("uq_workspaces_name")),
    )
    projects = op.create_table(
        "projects",
        sa.Column("id", sa.Integer(), nullable=False),
        sa.Column("workspace_id", sa.Integer(), nullable=False),
        sa.Column("name", sa.String(length=128), nullable=False),
        sa.Column("key", sa.String(length=5), nullable=False),
        sa.Column("description", sa.Text(), nullable=False),
        sa.Column("archived", sa.Boolean(), nullable=False),
        sa.Column("immutable", sa.Boolean(), nullable=False),
        sa.Column("owner", sa.String(length=128), nullable=False),
        sa.Column("created_at", sa.DateTime(timezone=True), nullable=False),
        sa.ForeignKeyConstraint(
            ["workspace_id"],
            ["workspaces.id"],
            name=op.f("fk_projects_workspace_id_workspaces"),
            ondelete="CASCADE",
        ),
        sa.PrimaryKeyConstraint("id", name=op.f("pk_projects")),
        sa.UniqueConstraint("key", name=op.f("uq_projects_key")),
        sa.UniqueConstraint("workspace_id", "name", name=op.f("uq_projects_workspace_id_name")),
    )
    op.create_index(op.f("ix_projects_workspace_id"), "projects", ["workspace_id"], unique=False)
    now = datetime.now(UTC)
    common = {"archived": False, "immutable": True, "owner": "admin", "created_at": now}
    op.bulk_insert(workspaces, [{"id": 1, "name": "Uncategorized", **common}])
    op.bulk_insert(
        projects,
        [
            {
                "id": 1,
                "workspace_id": 1,
                "name": "Uncategorized",
                "key": "UNC",
                "description": "",
                **common,
            }
        ],
    )
    if op.get_bind().dialect.name == "postgresql":
        # Rows given explicit ids: the sequences start after them.
        for table in ("workspaces", "projects"):
            op.execute(
                sa.text(
                    f"SELECT setval(pg_get_serial_sequence('{table}', 'id'), "
                    f"(SELECT MAX(id) FROM {table}))"
                )
            )
    with op.batch_alter_table("experiments", table_kwargs={"sqlite_autoincrement": True}) as batch:
        batch.add_column(sa.Column("project_id", sa.Integer(), server_default="1", nullable=False))
        batch.create_index(op.f("ix_experiments_project_id"), ["project_id"], unique=False)
        batch.create_foreign_key(
            op.f("fk_experiments_project_id_projects"), "projects", ["project_id"], ["id"]
        )


def downgrade() -> None:
    with op.batch_alter_table("experiments", table_kwargs={"sqlite_autoincrement": True}) as batch:
        batch.drop_constraint(op.f("fk_experiments_project_id_projects"), type_="foreignkey")
        batch.drop_index(op.f("ix_experiments_project_id"))
        batch.drop_column("project_id")
    op.drop_index(op.f("ix_projects_workspace_id"), table_name="projects")
    op.drop_table("projects")
    op.drop_table("workspaces")
