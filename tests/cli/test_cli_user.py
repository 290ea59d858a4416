"""``pedl user ...`` against a real master: signing in and out with a saved token (mode
0600, one per master, in ``PEDL_CONFIG_DIR``), who am I, accounts (administrators), and a
401 that says how to sign in. Also ``pedl master --no-auth`` off loopback."""

from __future__ import annotations

import json
import stat
import uuid
from pathlib import Path

import pytest
from click.testing import CliRunner, Result

from pedl.cli import cli
from pedl.client import Client, NotSignedInError, TokenStore
from tests.accounts import ADMIN, ADMIN_PASSWORD
from tests.client.helpers import LiveMaster


def run(master: LiveMaster, *args: str, input: str | None = None) -> Result:
    return CliRunner().invoke(cli, ["--master", master.url, *args], input=input)


@pytest.fixture
def signed_out(monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> Path:
    """No PEDL_USER/PEDL_PASSWORD, and a config directory of this test's own."""
    monkeypatch.delenv("PEDL_USER")
    monkeypatch.delenv("PEDL_PASSWORD")
    config = tmp_path / "config"
    monkeypatch.setenv("PEDL_CONFIG_DIR", str(config))
    return config


def test_login_whoami_logout(master: LiveMaster, signed_out: Path) -> None:
    refused = run(master, "experiment", "list")
    assert refused.exit_code == 1
    assert "answered 401" in refused.output and "pedl user login" in refused.output
    assert "PEDL_USER" in refused.output and "Traceback" not in refused.output

    wrong = run(master, "user", "login", ADMIN, input="not the password\n")
    assert wrong.exit_code == 1 and "wrong username or password" in wrong.output

    login = run(master, "user", "login", ADMIN, input=f"{ADMIN_PASSWORD}\n")
    assert login.exit_code == 0, login.output
    assert f"Signed in to {master.url} as admin (administrator)" in login.output
    tokens = signed_out / "auth.json"
    assert stat.S_IMODE(tokens.stat().st_mode) == 0o600
    assert stat.S_IMODE(signed_out.stat().st_mode) == 0o700
    saved = TokenStore().get(master.url)
    assert saved is not None and saved.username == ADMIN
    assert ADMIN_PASSWORD not in tokens.read_text()

    whoami = run(master, "user", "whoami", "--json")
    assert whoami.exit_code == 0, whoami.output
    assert json.loads(whoami.output)["username"] == ADMIN
    assert run(master, "experiment", "list").exit_code == 0

    logout = run(master, "user", "logout")
    assert logout.exit_code == 0 and "Signed out" in logout.output
    assert TokenStore().get(master.url) is None
    assert run(master, "user", "whoami").exit_code == 1


def test_accounts_from_the_cli(master: LiveMaster, signed_out: Path) -> None:
    assert run(master, "user", "login", ADMIN, input=f"{ADMIN_PASSWORD}\n").exit_code == 0
    name = f"cli-{uuid.uuid4().hex[:8]}"
    created = run(master, "user", "create", name, input="first password\nfirst password\n")
    assert created.exit_code == 0, created.output
    assert f"Created user {name}" in created.output
    listed = run(master, "user", "list", "--json")
    mine = [u for u in json.loads(listed.output) if u["username"] == name]
    assert mine == [{**mine[0], "admin": False, "active": True}]

    # The new user signs in, changes their own password, may not list accounts.
    assert run(master, "user", "login", name, input="first password\n").exit_code == 0
    assert run(master, "user", "whoami").output.strip() == name
    refused = run(master, "user", "list")
    assert refused.exit_code == 1 and "only an administrator" in refused.output
    changed = run(
        master,
        "user",
        "change-password",
        input="first password\nsecond password\nsecond password\n",
    )
    assert changed.exit_code == 0, changed.output
    assert run(master, "user", "login", name, input="first password\n").exit_code == 1
    assert run(master, "user", "login", name, input="second password\n").exit_code == 0

    # The administrator deactivates it: its saved token stops working.
    with Client(master.url) as as_user:
        assert as_user.whoami().username == name
        with Client(master.url) as admin:
            admin.login(ADMIN, ADMIN_PASSWORD)
            assert not admin.deactivate_user(name).active
            with pytest.raises(NotSignedInError, match="pedl user login"):
                as_user.list_experiments()
            assert admin.activate_user(name).active


def test_sdk_signs_in_from_the_environment_and_saves_the_token(
    master: LiveMaster, monkeypatch: pytest.MonkeyPatch, tmp_path: Path
) -> None:
    monkeypatch.setenv("PEDL_CONFIG_DIR", str(tmp_path / "config"))
    with Client(master.url) as sdk:
        assert sdk.whoami().username == ADMIN  # PEDL_USER / PEDL_PASSWORD (tests/conftest.py)
    saved = TokenStore().get(master.url)
    assert saved is not None and saved.username == ADMIN
    with Client(master.url) as sdk:  # the saved token, no second sign-in
        sdk.list_experiments()
        assert TokenStore().get(master.url) == saved
        sdk.logout()
    # A revoked saved token: the SDK signs in again with the password it knows.
    TokenStore().put(master.url, saved)
    with Client(master.url) as sdk:
        assert sdk.whoami().username == ADMIN
    renewed = TokenStore().get(master.url)
    assert renewed is not None and renewed.token != saved.token


def test_no_auth_master_refuses_to_listen_beyond_loopback() -> None:
    result = CliRunner().invoke(cli, ["master", "--no-auth", "--host", "0.0.0.0"])
    assert result.exit_code == 1
    assert "loopback only" in result.output and "Traceback" not in result.output
