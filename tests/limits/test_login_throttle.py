"""Password guessing at ``POST /auth/login`` is throttled per username and per client address:
429 with ``Retry-After`` once the master's limit of attempts is reached within its window,
without the password being checked (no argon2 verification); a successful sign-in clears its
username's count. On a real master over HTTP (SQLite: the throttle keeps no database state),
and the window itself on the throttle with a clock of the test's own."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path
from typing import Any

import httpx
import pytest
from argon2 import PasswordHasher

from pedl.master import MasterSettings
from pedl.master.api._login_throttle import LoginThrottle
from tests.master.helpers import add_user, served_master
from tests.waits import scaled

PER_USER = 3
PER_ADDRESS = 6
WINDOW = 300.0
PASSWORD = "correct horse battery"


@pytest.fixture
def http(tmp_path: Path) -> Iterator[httpx.Client]:
    """A master with low login limits and the accounts alice and bob."""
    settings = MasterSettings(
        home=tmp_path / "home",
        login_max_failures=PER_USER,
        login_max_failures_per_address=PER_ADDRESS,
        login_failure_window_seconds=WINDOW,
    )
    with served_master(settings) as (server, database):
        for name in ("alice", "bob"):
            add_user(database, name, PASSWORD)
        # 60 s: longer than SQLite's busy timeout (30 s), so a write stuck behind a lock comes
        # back as the master's own 503, which says so, rather than as a client timeout.
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


def _status(http: httpx.Client, username: str, password: str) -> int:
    """The status of a sign-in; any other answer than 200, 401 or 429 fails with its text."""
    answer = _login(http, username, password)
    assert answer.status_code in (200, 401, 429), answer.text
    return answer.status_code


def test_a_username_is_throttled_and_a_success_clears_it(
    http: httpx.Client, verifications: list[str]
) -> None:
    for _ in range(PER_USER - 1):
        assert _status(http, "alice", "wrong") == 401
    assert _status(http, "alice", PASSWORD) == 200  # clears alice's count
    for _ in range(PER_USER):
        assert _status(http, "alice", "wrong") == 401
    checked = len(verifications)
    assert checked == 2 * PER_USER  # every attempt so far was checked
    throttled = _login(http, "alice", PASSWORD)  # the right password, too late
    assert throttled.status_code == 429, throttled.text
    assert 1 <= int(throttled.headers["Retry-After"]) <= WINDOW
    error = throttled.json()["error"]
    assert error["field"] == "username" and "login_max_failures" in error["message"]
    assert len(verifications) == checked, "a throttled attempt's password was checked"
    # Another username from the same address is not throttled (5 of its 6 attempts used).
    assert _status(http, "bob", PASSWORD) == 200


def test_an_address_is_throttled_whatever_the_username(
    http: httpx.Client, verifications: list[str]
) -> None:
    for i in range(PER_ADDRESS):
        assert _status(http, f"guess{i}", "wrong") == 401
    checked = len(verifications)
    assert checked == PER_ADDRESS
    throttled = _login(http, "alice", PASSWORD)
    assert throttled.status_code == 429, throttled.text
    assert "login_max_failures_per_address" in throttled.json()["error"]["message"]
    assert len(verifications) == checked


class _Clock:
    def __init__(self) -> None:
        self.now = 1000.0

    def __call__(self) -> float:
        return self.now


def test_attempts_leave_the_window() -> None:
    clock = _Clock()
    throttle = LoginThrottle(
        max_failures=2, max_failures_per_address=100, window_seconds=60, clock=clock
    )
    assert throttle.begin("alice", "10.0.0.1") is None
    clock.now += 10
    assert throttle.begin("alice", "10.0.0.2") is None
    clock.now += 5
    # The first attempt leaves the window 45 seconds from now.
    assert throttle.begin("alice", "10.0.0.3") == 45
    clock.now += 44.5
    assert throttle.begin("alice", "10.0.0.3") == 1
    clock.now += 0.5
    assert throttle.begin("alice", "10.0.0.3") is None
    # Refused attempts were not counted: one more fits only once the second has left too.
    assert throttle.begin("alice", "10.0.0.3") == 10
