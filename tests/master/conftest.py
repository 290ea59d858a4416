"""Fixtures of the master's tests: real SQLite and PostgreSQL databases, a real HTTP server.

Every database test runs against both backends ("one contract suite, every backend").
PostgreSQL must be running on 127.0.0.1:5432 (trust auth, user postgres, database ``test``);
when it is not, the PostgreSQL variants fail with a message saying so (they are not skipped).
"""

from __future__ import annotations

import secrets
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import httpx
import psycopg
import pytest
from sqlalchemy import delete

from pedl.db import Base, Database, workspaces
from pedl.master import MasterSettings, create_app
from tests.waits import scaled

from .helpers import LiveServer, sign_in

PG_ADMIN_DSN = "host=127.0.0.1 port=5432 user=postgres dbname=test connect_timeout=5"
BACKENDS = ["sqlite", "postgresql"]


def _pg_admin() -> psycopg.Connection[Any]:
    try:
        return psycopg.connect(PG_ADMIN_DSN, autocommit=True)
    except psycopg.OperationalError as err:
        pytest.fail(
            "PostgreSQL is required for the master's database tests: start it on "
            f"127.0.0.1:5432 (trust auth, user postgres, database test). Connection error: {err}",
            pytrace=False,
        )


def _create_pg_database() -> tuple[str, str]:
    name = f"pedl_test_{secrets.token_hex(6)}"
    with _pg_admin() as conn:
        conn.execute(f'CREATE DATABASE "{name}"')
    return name, f"postgresql+psycopg://postgres@127.0.0.1:5432/{name}"


def _drop_pg_database(name: str) -> None:
    with _pg_admin() as conn:
        conn.execute(f'DROP DATABASE IF EXISTS "{name}" WITH (FORCE)')


@pytest.fixture(params=BACKENDS)
def fresh_db_url(request: pytest.FixtureRequest, tmp_path: Path) -> Iterator[str]:
    """The URL of a new, empty database (not migrated), dropped afterwards."""
    if request.param == "sqlite":
        yield f"sqlite:///{tmp_path / 'fresh.db'}"
        return
    name, url = _create_pg_database()
    try:
        yield url
    finally:
        _drop_pg_database(name)


@pytest.fixture(scope="session", params=BACKENDS)
def backend_url(
    request: pytest.FixtureRequest, tmp_path_factory: pytest.TempPathFactory
) -> Iterator[str]:
    """One migrated database per backend, shared by the session (tables emptied per test)."""
    if request.param == "sqlite":
        url = f"sqlite:///{tmp_path_factory.mktemp('db') / 'pedl.db'}"
        name = None
    else:
        name, url = _create_pg_database()
    database = Database(url)
    database.upgrade()
    database.dispose()
    try:
        yield url
    finally:
        if name is not None:
            _drop_pg_database(name)


@pytest.fixture
def database(backend_url: str) -> Iterator[Database]:
    """A :class:`Database` on an empty, migrated database of each backend."""
    db = Database(backend_url)
    with db.session(write=True) as session:
        for table in reversed(Base.metadata.sorted_tables):
            session.execute(delete(table))
        workspaces.ensure_defaults(session)  # as migrated: the default workspace and project
    try:
        yield db
    finally:
        db.dispose()


@pytest.fixture(scope="session")
def live_server(backend_url: str, tmp_path_factory: pytest.TempPathFactory) -> Iterator[LiveServer]:
    """The master's app served over HTTP, on each backend."""
    home = tmp_path_factory.mktemp("home")
    settings = MasterSettings(home=home, db_url=backend_url)
    server = LiveServer(create_app(settings))
    server.start()
    try:
        yield server
    finally:
        server.stop()


@pytest.fixture
def admin_headers(database: Database) -> dict[str, str]:
    """The Authorization header of a session of ``admin`` in this test's (emptied) database."""
    return sign_in(database)


@pytest.fixture
def client(
    live_server: LiveServer, database: Database, admin_headers: dict[str, str]
) -> Iterator[httpx.Client]:
    """An HTTP client of the live master, signed in as ``admin``, whose database is empty
    (but for that account) at the start of the test."""
    with httpx.Client(
        base_url=live_server.url + "/api/v1", timeout=scaled(30), headers=admin_headers
    ) as http:
        yield http
