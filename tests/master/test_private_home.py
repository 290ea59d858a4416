"""The master's home and database are private to its user (issue 36, item 4): a master whose
home does not exist creates it, and the directories on the way, with mode 0700, and its SQLite
database (with its ``-wal`` and ``-shm`` files) with mode 0600, whatever the umask; a master
finds a database other users could read refused at start, saying which files and the ``chmod``
that makes them private. A real master process, on SQLite and PostgreSQL (where the home is
private too, and there is no file to check)."""

from __future__ import annotations

import os
import stat
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path

import pytest

from tests.master.conftest import BACKENDS, _create_pg_database, _drop_pg_database
from tests.master.e2e import MasterProcess, free_port
from tests.waits import scaled

pytestmark = pytest.mark.slow  # a master process per database


@pytest.fixture(params=BACKENDS)
def db_env(request: pytest.FixtureRequest) -> Iterator[dict[str, str]]:
    """The master's database: its default SQLite file in its home, or a new PostgreSQL one."""
    if request.param == "sqlite":
        yield {}
        return
    name, url = _create_pg_database()
    try:
        yield {"PEDL_DB_URL": url}
    finally:
        _drop_pg_database(name)


def _mode(path: Path) -> int:
    return stat.S_IMODE(path.stat().st_mode)


def test_a_new_home_and_database_are_private(tmp_path: Path, db_env: dict[str, str]) -> None:
    previous = os.umask(0o022)  # the usual umask: the master must not depend on it
    try:
        home = tmp_path / "outer" / "pedl" / "deeper"  # none of it exists yet
        master = MasterProcess(tmp_path / "outer", env={**db_env, "PEDL_HOME": str(home)})
        master.start()
    finally:
        os.umask(previous)
    try:
        assert master.http.get("/experiments").status_code == 200  # it serves
        for directory in (master.home / "pedl", home):
            assert _mode(directory) == 0o700, directory
        database = home / "pedl.db"
        if db_env:  # PostgreSQL: no file of its own
            assert not database.exists()
            return
        files = [database, *(home / f"pedl.db{end}" for end in ("-wal", "-shm"))]
        assert all(path.exists() for path in files), sorted(os.listdir(home))
        assert {path.name: _mode(path) for path in files} == {path.name: 0o600 for path in files}
    finally:
        master.stop()


def _start_refused(tmp_path: Path, home: Path, env: dict[str, str]) -> str:
    """Run ``pedl master`` on ``home``; it must exit 1 at once. Its output."""
    environment = {**os.environ, **env, "HOME": str(tmp_path)}
    if "PEDL_DB_URL" not in env:
        environment.pop("PEDL_DB_URL", None)
    done = subprocess.run(
        [sys.executable, "-m", "pedl", "master", "--home", str(home), "--port", str(free_port())],
        env=environment,
        capture_output=True,
        text=True,
        timeout=scaled(60),
        check=False,
    )
    assert done.returncode == 1, done.stdout + done.stderr
    return done.stdout + done.stderr


def test_a_database_others_can_read_is_refused_at_start(
    tmp_path: Path, db_env: dict[str, str]
) -> None:
    home = tmp_path / "home"
    master = MasterProcess(tmp_path, env={**db_env, "PEDL_HOME": str(home)}).start()
    master.stop()
    database = home / "pedl.db"
    if db_env:  # PostgreSQL: a home others can read (made so by hand) is no database file
        home.chmod(0o755)
        again = MasterProcess(tmp_path, env={**db_env, "PEDL_HOME": str(home)}).start()
        again.stop()
        return
    database.chmod(0o644)
    output = _start_refused(tmp_path, home, db_env)
    lines = [line for line in output.splitlines() if line.startswith("pedl master: ")]
    assert len(lines) == 1, output  # one line, no traceback
    message = lines[0]
    assert "the master's database can be read or written by other users" in message
    assert f"{database} (mode 644)" in message
    assert f"chmod 600 {database}" in message
    assert "Traceback" not in output
    # A -wal file left readable is refused too, with the database's own file private.
    database.chmod(0o600)
    wal = home / "pedl.db-wal"
    wal.write_bytes(b"")
    wal.chmod(0o640)
    message = _start_refused(tmp_path, home, db_env)
    assert f"{wal} (mode 640)" in message and f"chmod 600 {wal}" in message
    assert f"{database} (mode" not in message
    # Made private as it says: the master starts again, on the same database.
    wal.chmod(0o600)
    master = MasterProcess(tmp_path, env={**db_env, "PEDL_HOME": str(home)}).start()
    try:
        assert master.http.get("/experiments").status_code == 200
    finally:
        master.stop()
