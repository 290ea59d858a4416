"""Migration 0014 (workspaces and projects) on SQLite and PostgreSQL: an experiment made
before it lands in the default project ``Uncategorized`` of the default workspace, ids stay
unreused, and new workspaces and projects get ids after the defaults'."""

from __future__ import annotations

from sqlalchemy import text

from pedl.db import Database, _migrate
from pedl.db import experiments as experiments_repo
from pedl.db import workspaces as workspaces_repo
from tests.master.test_ids_never_reused import create_at_0012


def _old_experiment(database: Database) -> int:
    """An experiment written at revision 0013 (whose tables are 0012's, in SQL: today's models
    have later columns)."""
    return create_at_0012(database)[0]


def test_an_experiment_of_before_lands_in_the_default_project(fresh_db_url: str) -> None:
    database = Database(fresh_db_url)
    try:
        _migrate.upgrade(database.engine, "0013")
        old = _old_experiment(database)
        database.upgrade()  # through 0014, to the head
        assert _migrate.current_revision(database.engine) == _migrate.head_revision()
        with database.session() as session:
            experiment = experiments_repo.get_experiment(session, old)
            assert experiment.project_id == 1
            assert experiment.workspace_id == 1
            assert (experiment.workspace_name, experiment.project_name) == (
                "Uncategorized",
                "Uncategorized",
            )
            default = workspaces_repo.get_project(session, 1)
            assert default.immutable and default.key == "UNC" and not default.archived
        with database.session(write=True) as session:
            workspace = workspaces_repo.create_workspace(session, name="team", owner="alice")
            project = workspaces_repo.create_project(
                session, workspace_id=workspace.id, name="vision", owner="alice"
            )
            assert workspace.id > 1 and project.id > 1
            assert project.key.startswith("VIS") and len(project.key) == 5
            moved = workspaces_repo.move_experiment(session, old, project.id)
            assert moved.project_id == project.id and moved.workspace_id == workspace.id
        with database.engine.connect() as conn:
            if database.dialect == "sqlite":
                ddl = conn.execute(
                    text("SELECT sql FROM sqlite_master WHERE name = 'experiments'")
                ).scalar_one()
                assert "AUTOINCREMENT" in ddl and "REFERENCES projects" in ddl
                assert conn.execute(text("PRAGMA foreign_key_check")).all() == []
    finally:
        database.dispose()
