"""``POST /auth/login`` and ``POST /users/{name}/password`` on a real master over HTTP (SQLite):
the slow password hash is checked and made outside the database's write lock, and a hash made
with older argon2 parameters is replaced at a successful sign-in."""

from __future__ import annotations

import sqlite3
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import httpx
import pytest
from argon2 import PasswordHasher, extract_parameters
from sqlalchemy import select

from pedl.db import Database, User
from pedl.db import users as users_repo
from pedl.master import MasterSettings
from tests.master.helpers import add_user, served_master
from tests.waits import scaled

PASSWORD = "correct horse battery"


class _Master:
    def __init__(self, http: httpx.Client, database: Database, db_file: Path) -> None:
        self.http, self.database, self.db_file = http, database, db_file


@pytest.fixture
def master(tmp_path: Path) -> Iterator[_Master]:
    settings = MasterSettings(home=tmp_path / "home")
    with served_master(settings) as (server, database):
        add_user(database, "alice", PASSWORD)
        with httpx.Client(base_url=server.url + "/api/v1", timeout=scaled(60)) as http:
            yield _Master(http, database, Path(settings.db_url.removeprefix("sqlite:///")))


def _write_lock_free(db_file: Path) -> bool:
    """Whether another connection can take SQLite's write lock at once (no wait)."""
    other = sqlite3.connect(db_file, timeout=0, isolation_level=None)
    try:
        other.execute("BEGIN IMMEDIATE")
        other.execute("ROLLBACK")
        return True
    except sqlite3.OperationalError:  # database is locked
        return False
    finally:
        other.close()


def test_the_password_is_checked_outside_the_write_lock(
    master: _Master, monkeypatch: pytest.MonkeyPatch
) -> None:
    assert master.db_file.exists()
    lock_free_while_checking: list[bool] = []
    real = PasswordHasher.verify

    def verify(self: PasswordHasher, hash: str | bytes, password: str | bytes) -> Any:
        lock_free_while_checking.append(_write_lock_free(master.db_file))
        return real(self, hash, password)

    monkeypatch.setattr(PasswordHasher, "verify", verify)
    for password, status in ((PASSWORD, 200), ("wrong", 401)):
        answer = master.http.post("/auth/login", json={"username": "alice", "password": password})
        assert answer.status_code == status, answer.text
    assert lock_free_while_checking == [True, True]


def test_a_password_change_hashes_outside_the_write_lock(
    master: _Master, monkeypatch: pytest.MonkeyPatch
) -> None:
    answer = master.http.post("/auth/login", json={"username": "alice", "password": PASSWORD})
    assert answer.status_code == 200, answer.text
    alice = {"Authorization": f"Bearer {answer.json()['token']}"}
    lock_free: list[tuple[str, bool]] = []
    real_verify, real_hash = PasswordHasher.verify, PasswordHasher.hash

    def verify(self: PasswordHasher, hash: str | bytes, password: str | bytes) -> Any:
        lock_free.append(("verify", _write_lock_free(master.db_file)))
        return real_verify(self, hash, password)

    def hash_(self: PasswordHasher, password: str | bytes, **kwargs: Any) -> str:
        lock_free.append(("hash", _write_lock_free(master.db_file)))
        return real_hash(self, password, **kwargs)

    monkeypatch.setattr(PasswordHasher, "verify", verify)
    monkeypatch.setattr(PasswordHasher, "hash", hash_)
    wrong = {"password": "a new password", "old_password": "not it"}
    answer = master.http.post("/users/alice/password", json=wrong, headers=alice)
    assert answer.status_code == 403, answer.text
    right = {"password": "a new password", "old_password": PASSWORD}
    answer = master.http.post("/users/alice/password", json=right, headers=alice)
    assert answer.status_code == 204, answer.text
    assert lock_free == [("verify", True), ("verify", True), ("hash", True)]
    monkeypatch.undo()
    signed_in = master.http.post(
        "/auth/login", json={"username": "alice", "password": "a new password"}
    )
    assert signed_in.status_code == 200, signed_in.text


def test_an_older_hash_is_replaced_at_sign_in(master: _Master) -> None:
    old = PasswordHasher(time_cost=1, memory_cost=8 * 1024, parallelism=1).hash(PASSWORD)
    with master.database.session(write=True) as session:
        user = session.scalars(select(User).where(User.username == "alice")).one()
        user.password_hash = old
    answer = master.http.post("/auth/login", json={"username": "alice", "password": PASSWORD})
    assert answer.status_code == 200, answer.text
    with master.database.session() as session:
        stored = session.scalars(select(User.password_hash).where(User.username == "alice")).one()
    assert stored != old
    assert extract_parameters(stored) == extract_parameters(users_repo.hash_password("x"))
    assert PasswordHasher().verify(stored, PASSWORD)
    # And the new hash signs in.
    again = master.http.post("/auth/login", json={"username": "alice", "password": PASSWORD})
    assert again.status_code == 200, again.text
