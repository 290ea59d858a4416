"""Migrations: apply on an empty database, idempotent, and equal to the models."""

from __future__ import annotations

import threading
import time
from pathlib import Path

import pytest
from alembic.autogenerate import compare_metadata
from alembic.runtime.migration import MigrationContext
from sqlalchemy import event, inspect, text

from pedl.db import Base, Database, _migrate, current_revision, head_revision
from pedl.db._models import exists_on
from tests.waits import scaled


def test_upgrade_empty_database_then_again(fresh_db_url: str) -> None:
    database = Database(fresh_db_url)
    try:
        assert current_revision(database.engine) is None
        database.upgrade()
        assert current_revision(database.engine) == head_revision()
        tables = set(inspect(database.engine).get_table_names())
        assert {t.name for t in Base.metadata.sorted_tables} <= tables
        database.upgrade()  # idempotent
        assert current_revision(database.engine) == head_revision()
        with database.engine.connect() as conn:
            versions = conn.execute(text("SELECT version_num FROM alembic_version")).all()
        assert versions == [(head_revision(),)]
    finally:
        database.dispose()


def test_migrations_create_exactly_the_models(fresh_db_url: str) -> None:
    database = Database(fresh_db_url)
    try:
        database.upgrade()
        with database.engine.connect() as conn:
            context = MigrationContext.configure(
                conn,
                opts={"compare_type": True, "include_object": exists_on(conn.dialect.name)},
            )
            differences = compare_metadata(context, Base.metadata)
        assert differences == []
    finally:
        database.dispose()


def test_sqlite_connections_are_configured(tmp_path: Path) -> None:
    database = Database(f"sqlite:///{tmp_path}/sub/dir/pedl.db")  # directory created
    try:
        with database.engine.connect() as conn:
            assert conn.exec_driver_sql("PRAGMA journal_mode").scalar() == "wal"
            assert conn.exec_driver_sql("PRAGMA foreign_keys").scalar() == 1
            assert conn.exec_driver_sql("PRAGMA busy_timeout").scalar() == 30000
    finally:
        database.dispose()


def test_postgresql_urls_use_psycopg3() -> None:
    database = Database("postgresql://postgres@127.0.0.1:5432/test")
    try:
        assert database.engine.url.drivername == "postgresql+psycopg"
        assert database.dialect == "postgresql"
    finally:
        database.dispose()


def test_concurrent_upgrades_in_one_process_each_migrate_their_own_database(
    tmp_path: Path,
) -> None:
    """Alembic hands ``env.py`` its config through a process-global proxy: two upgrades at
    once in one process (two in-process masters, local mode beside a master) must not run on
    each other's connection or remove each other's proxy."""
    databases = [Database(f"sqlite:///{tmp_path / f'db{i}.db'}") for i in range(6)]
    errors: list[BaseException] = []
    start = threading.Barrier(len(databases))

    def migrate(database: Database) -> None:
        try:
            start.wait()
            database.upgrade()
        except BaseException as err:  # a thread's error fails the test below
            errors.append(err)

    threads = [threading.Thread(target=migrate, args=(d,)) for d in databases]
    try:
        for thread in threads:
            thread.start()
        for thread in threads:
            thread.join(120)
        assert errors == []
        assert [current_revision(d.engine) for d in databases] == [head_revision()] * 6
    finally:
        for database in databases:
            database.dispose()


def test_an_upgrade_waits_for_a_slow_one_in_the_same_process(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """An upgrade that finds another one of this process running longer than
    ``ALEMBIC_LOCK_WARN_S`` still waits for it: run beside it, the first to finish would
    remove Alembic's proxies under the other."""
    monkeypatch.setattr(_migrate, "ALEMBIC_LOCK_WARN_S", 0.05)
    slow, other = (Database(f"sqlite:///{tmp_path / f'{name}.db'}") for name in ("slow", "o"))
    in_ddl = threading.Event()

    @event.listens_for(slow.engine, "before_cursor_execute")
    def stall(_conn: object, _cursor: object, statement: str, *_args: object) -> None:
        if statement.lstrip().startswith("CREATE") and not in_ddl.is_set():
            in_ddl.set()
            time.sleep(1.0)  # inside the slow upgrade's first migration script

    errors: list[BaseException] = []

    def migrate(database: Database) -> None:
        try:
            database.upgrade()
        except BaseException as err:  # a thread's error fails the test below
            errors.append(err)

    first = threading.Thread(target=migrate, args=(slow,))
    first.start()
    try:
        assert in_ddl.wait(scaled(30))
        migrate(other)  # waits well past ALEMBIC_LOCK_WARN_S
        first.join(60)
        assert errors == []
        assert [current_revision(d.engine) for d in (slow, other)] == [head_revision()] * 2
    finally:
        slow.dispose()
        other.dispose()
