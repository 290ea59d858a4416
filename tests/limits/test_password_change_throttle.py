"""Password guessing through ``POST /users/{name}/password`` (one's own ``old_password``) is
throttled by the same limiter as ``POST /auth/login``: per username and per client address,
429 with ``Retry-After`` without the password being checked, and the guesses made there
throttle sign-ins too. On a real master over HTTP, on SQLite and PostgreSQL (the accounts'
database; the throttle itself keeps no database state)."""

from __future__ import annotations

from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any

import httpx
import pytest
from argon2 import PasswordHasher

from pedl.master import MasterSettings
from tests.master.conftest import BACKENDS, _create_pg_database, _drop_pg_database
from tests.master.helpers import add_user, served_master
from tests.waits import scaled

PASSWORD = "correct horse battery"
GUESSES = 30


@pytest.fixture(params=BACKENDS)
def db_url(request: pytest.FixtureRequest, tmp_path: Path) -> Iterator[str]:
    """A new database of each backend (migrated by the master at its start)."""
    if request.param == "sqlite":
        yield f"sqlite:///{tmp_path / 'pedl.db'}"
        return
    name, url = _create_pg_database()
    try:
        yield url
    finally:
        _drop_pg_database(name)


@contextmanager
def _master(home: Path, db_url: str = "", **limits: Any) -> Iterator[httpx.Client]:
    """A master with the accounts alice and bob, and ``limits`` as its login settings."""
    with served_master(MasterSettings(home=home, db_url=db_url, **limits)) as (server, database):
        for name in ("alice", "bob"):
            add_user(database, name, PASSWORD)
        with httpx.Client(base_url=server.url + "/api/v1", timeout=scaled(60)) as client:
            yield client


@pytest.fixture
def verifications(monkeypatch: pytest.MonkeyPatch) -> list[str]:
    """Every argon2 verification from now on (argon2's own, counted and carried out)."""
    calls: list[str] = []
    real = PasswordHasher.verify

    def counting(self: PasswordHasher, hash: str | bytes, password: str | bytes) -> Any:
        calls.append(str(password))
        return real(self, hash, password)

    monkeypatch.setattr(PasswordHasher, "verify", counting)
    return calls


def _login(http: httpx.Client, username: str, password: str) -> httpx.Response:
    return http.post("/auth/login", json={"username": username, "password": password})


def _guess(http: httpx.Client, token: str, old_password: str) -> httpx.Response:
    return http.post(
        "/users/alice/password",
        json={"old_password": old_password, "password": "a brand new password"},
        headers={"Authorization": f"Bearer {token}"},
    )


def _signed_in(http: httpx.Client) -> str:
    answer = _login(http, "alice", PASSWORD)
    assert answer.status_code == 200, answer.text
    return str(answer.json()["token"])


def test_wrong_old_passwords_are_throttled_per_username(
    tmp_path: Path, db_url: str, verifications: list[str]
) -> None:
    with _master(tmp_path / "home", db_url) as http:  # the default limits: 10 per username
        token = _signed_in(http)
        statuses = [_guess(http, token, f"wrong {i}").status_code for i in range(GUESSES)]
        assert statuses == [403] * 10 + [429] * (GUESSES - 10)
        checked = len(verifications)
        assert checked == 1 + 10  # the sign-in and the ten guesses let through
        throttled = _guess(http, token, PASSWORD)  # the right one, too late
        assert throttled.status_code == 429, throttled.text
        assert 1 <= int(throttled.headers["Retry-After"]) <= 300
        error = throttled.json()["error"]
        assert error["field"] == "old_password" and "login_max_failures" in error["message"]
        # Signing in to the account is throttled by the same count.
        login = _login(http, "alice", PASSWORD)
        assert login.status_code == 429, login.text
        assert int(login.headers["Retry-After"]) >= 1
        assert len(verifications) == checked, "a throttled attempt's password was checked"


def test_wrong_old_passwords_count_against_the_address(tmp_path: Path, db_url: str) -> None:
    with _master(
        tmp_path / "home", db_url, login_max_failures=1000, login_max_failures_per_address=10
    ) as http:
        token = _signed_in(http)
        statuses = [_guess(http, token, f"wrong {i}").status_code for i in range(GUESSES)]
        assert statuses == [403] * 10 + [429] * (GUESSES - 10)
        # Another account's sign-in from the same address is throttled too.
        login = _login(http, "bob", PASSWORD)
        assert login.status_code == 429, login.text
        assert "login_max_failures_per_address" in login.json()["error"]["message"]


def test_a_right_old_password_clears_the_count(tmp_path: Path) -> None:
    with _master(tmp_path / "home", login_max_failures=3) as http:
        token = _signed_in(http)
        for i in range(2):
            assert _guess(http, token, f"wrong {i}").status_code == 403
        assert _guess(http, token, PASSWORD).status_code == 204
        # The count starts again: three more wrong guesses are checked, the fourth is not.
        statuses = [_guess(http, token, f"wrong again {i}").status_code for i in range(4)]
        assert statuses == [403, 403, 403, 429]
