"""Experiment and trial ids are never given twice, on SQLite as on PostgreSQL (as Determined
never reuses one): create, delete the newest, create again -> a new id. A SQLite database from
before migration 0013 (ids reused) keeps its rows and foreign keys when migrated."""

from __future__ import annotations

import secrets
from datetime import UTC, datetime
from pathlib import Path

import pytest
from sqlalchemy import MetaData, text

from pedl.db import Database, _migrate
from pedl.db import experiments as experiments_repo
from pedl.db import trials as trials_repo
from pedl.vocabulary import ExperimentState

TABLES = ("experiments", "model_definitions", "trials")


def create(database: Database) -> tuple[int, int]:
    """A new experiment with one trial: their ids."""
    with database.session(write=True) as session:
        experiment = experiments_repo.create_experiment(
            session,
            config={"searcher": {"name": "single"}},
            config_text="searcher: {name: single}\n",
            model_definition=b"archive",
            owner="admin",
        )
        session.flush()
        trial, _ = trials_repo.create_trial(
            session, experiment_id=experiment.id, hparams={"lr": 0.1}, seed=1
        )
        return experiment.id, trial.id


def delete(database: Database, experiment_id: int) -> None:
    with database.session(write=True) as session:
        experiments_repo.set_experiment_state(session, experiment_id, ExperimentState.COMPLETED)
    with database.session(write=True) as session:
        experiments_repo.delete_experiment(session, experiment_id)


def create_at_0012(database: Database) -> tuple[int, int]:
    """:func:`create` in a database at revision 0012, through its tables as they are there
    (reflected): the models are today's, whose later columns (workspaces', lineage's) the
    tables do not have yet."""
    now = datetime.now(UTC)
    with database.engine.begin() as conn:
        tables = MetaData()
        tables.reflect(conn, only=TABLES)
        experiments, model_definitions, trials = (tables.tables[t] for t in TABLES)
        experiment_id = conn.execute(
            experiments.insert()
            .values(
                config={"searcher": {"name": "single"}},
                config_text="searcher: {name: single}\n",
                owner="admin",
                state="ACTIVE",
                progress=0.0,
                smaller_is_better=True,
                created_at=now,
            )
            .returning(experiments.c.id)
        ).scalar_one()
        conn.execute(
            model_definitions.insert().values(
                experiment_id=experiment_id, archive=b"archive", size=7, sha256="0" * 64
            )
        )
        trial_id = conn.execute(
            trials.insert()
            .values(
                experiment_id=experiment_id,
                hparams={"lr": 0.1},
                seed=1,
                state="ACTIVE",
                restarts=0,
                total_batches=0,
                token_hash=secrets.token_hex(32),
                created_at=now,
            )
            .returning(trials.c.id)
        ).scalar_one()
    return experiment_id, trial_id


def delete_at_0012(database: Database, experiment_id: int) -> None:
    """:func:`delete` in a database at revision 0012 (its rows cascade, as there)."""
    with database.engine.begin() as conn:
        conn.execute(text("DELETE FROM experiments WHERE id = :id"), {"id": experiment_id})


def counts(database: Database) -> dict[str, int]:
    with database.engine.connect() as conn:
        return {t: conn.execute(text(f"SELECT count(*) FROM {t}")).scalar_one() for t in TABLES}


def test_a_deleted_newest_experiments_ids_are_not_given_again(fresh_db_url: str) -> None:
    database = Database(fresh_db_url)
    try:
        database.upgrade()
        first = create(database)
        newest = create(database)
        delete(database, newest[0])
        again = create(database)
        assert again[0] > newest[0] and again[1] > newest[1]
        assert first[0] < newest[0]
        delete(database, again[0])
        delete(database, first[0])
        last = create(database)
        assert last[0] > again[0] and last[1] > again[1]
    finally:
        database.dispose()


def test_an_old_sqlite_database_keeps_its_rows_and_foreign_keys(tmp_path: Path) -> None:
    database = Database(f"sqlite:///{tmp_path / 'old.db'}")
    try:
        _migrate.upgrade(database.engine, "0012")
        kept = [create_at_0012(database) for _ in range(3)]
        deleted = create_at_0012(database)
        delete_at_0012(database, deleted[0])  # before the migration: this id was free to reuse
        before = counts(database)
        database.upgrade()
        assert _migrate.current_revision(database.engine) == _migrate.head_revision()
        assert counts(database) == before
        with database.engine.connect() as conn:
            ddl = dict(conn.execute(text("SELECT name, sql FROM sqlite_master")).all())
            assert "AUTOINCREMENT" in ddl["experiments"] and "AUTOINCREMENT" in ddl["trials"]
            assert "REFERENCES experiments" in ddl["trials"]
            assert conn.execute(text("PRAGMA foreign_key_check")).all() == []
            assert conn.execute(text("PRAGMA foreign_keys")).scalar_one() == 1
            rows = conn.execute(text("SELECT id, experiment_id FROM trials ORDER BY id")).all()
        assert [tuple(r) for r in rows] == [(t, e) for e, t in kept]
        # The foreign keys still act: deleting an experiment deletes its trials.
        delete(database, kept[0][0])
        assert counts(database) == {t: n - 1 for t, n in before.items()}
        newest = create(database)
        delete(database, newest[0])
        assert create(database)[0] > newest[0]
    finally:
        database.dispose()


def test_a_migration_leaving_dangling_foreign_keys_commits_nothing(tmp_path: Path) -> None:
    database = Database(f"sqlite:///{tmp_path / 'dangling.db'}")
    try:
        _migrate.upgrade(database.engine, "0012")
        experiment_id, _ = create_at_0012(database)
        # A row whose experiment is gone, written with foreign keys off (as a broken
        # migration would leave it): the upgrade refuses to commit.
        with database.engine.connect() as conn:
            raw = conn.connection.dbapi_connection
            assert raw is not None
            raw.execute("PRAGMA foreign_keys=OFF")
            raw.execute("DELETE FROM experiments WHERE id = ?", (experiment_id,))
            raw.execute("PRAGMA foreign_keys=ON")
        with pytest.raises(_migrate.ForeignKeyError, match="dangling foreign keys"):
            database.upgrade()
        assert _migrate.current_revision(database.engine) == "0012"
        with database.engine.connect() as conn:
            assert conn.execute(text("PRAGMA foreign_keys")).scalar_one() == 1
    finally:
        database.dispose()
