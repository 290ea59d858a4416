"""A master gives back the memory of a large request once it is answered: nothing keeps a
model definition's archive after its experiment is created.

Two holders kept it before (measured on a real master: RSS 144 MB at rest, 369 MB for good
after a few concurrent 60 MB creates, up to a pool's worth of archives after more):

- SQLite's statements keep their bound values until bound again, and the ``sqlite3`` module
  caches each connection's statements: each pooled connection that inserted an archive held
  a copy of it (:func:`pedl.db._engine._forget_large_binds` closes such a connection
  when it returns to the pool);
- the experiment and its model definition refer to each other, so the archive waited for a
  full collection of the garbage collector (``create_experiment`` lets the written archive
  go).
"""

from __future__ import annotations

import gc
from pathlib import Path

from sqlalchemy import Engine, text

from pedl.db import Database, experiments, make_engine
from pedl.db._engine import SQLITE_LARGE_BIND_BYTES

from .helpers import make_archive


def _dbapi_connection(engine: Engine) -> object:
    with engine.connect() as conn:
        return conn.connection.dbapi_connection


def test_a_sqlite_connection_that_bound_a_large_value_is_replaced(tmp_path: Path) -> None:
    engine = make_engine(f"sqlite:///{tmp_path / 'pedl.db'}", pool_size=1)
    try:
        with engine.begin() as conn:
            conn.execute(text("CREATE TABLE blobs (data BLOB)"))
        first = _dbapi_connection(engine)
        with engine.begin() as conn:  # small values: the connection stays
            conn.execute(text("INSERT INTO blobs VALUES (:data)"), {"data": b"small"})
        assert _dbapi_connection(engine) is first
        with engine.begin() as conn:
            large = b"x" * SQLITE_LARGE_BIND_BYTES
            conn.execute(text("INSERT INTO blobs VALUES (:data)"), {"data": large})
        second = _dbapi_connection(engine)
        assert second is not first
        with engine.connect() as conn:  # the data is written all the same
            assert conn.execute(text("SELECT length(data) FROM blobs")).scalars().all() == [
                5,
                SQLITE_LARGE_BIND_BYTES,
            ]
        assert _dbapi_connection(engine) is second
    finally:
        engine.dispose()


def test_a_created_experiment_lets_its_archive_go(database: Database) -> None:
    archive = make_archive({"model_def.py": b"x = 1\n" * 1000})
    gc.disable()  # what only the garbage collector would free counts as kept
    try:
        with database.session(write=True) as session:
            experiment_id = experiments.create_experiment(
                session,
                config={},
                config_text="{}",
                model_definition=archive,
                owner="alice",
            ).id
        holders = [
            holder
            for holder in gc.get_referrers(archive)
            if isinstance(holder, dict) and "_sa_instance_state" in holder
        ]
        assert holders == [], "an ORM object still holds the archive"
    finally:
        gc.enable()
    with database.session() as session:
        assert experiments.get_model_definition(session, experiment_id).archive == archive
