"""det's ``user`` verbs that PEDL lacked, through ``det`` and ``pedl`` on a real master:
``user create --password``, ``user edit``, ``user rename``, ``user logout --all`` and ``user
list --all`` (det lists the active accounts unless --all), with det's user ids."""

from __future__ import annotations

import uuid

from click.testing import CliRunner, Result

from pedl.cli import cli
from pedl.cli._det import det
from pedl.client import Client
from tests.client.helpers import LiveMaster


def run_det(master: LiveMaster, *args: str) -> Result:
    return CliRunner().invoke(det, ["-m", master.url, *args])


def run_pedl(master: LiveMaster, *args: str) -> Result:
    return CliRunner().invoke(cli, ["--master", master.url, *args])


def test_create_edit_rename_list(master: LiveMaster, client: Client) -> None:
    name = f"verbs-{uuid.uuid4().hex[:8]}"
    created = run_det(master, "user", "create", name, "--password", "verbs-password-1")
    assert created.exit_code == 0, created.output
    user = client.get_user_by_name(name)
    assert not user.admin

    listed = run_det(master, "user", "list", "--csv")
    assert listed.exit_code == 0, listed.output
    row = next(line for line in listed.output.splitlines() if f",{name}," in line)
    assert row.split(",")[0] == str(user.user_id)

    edited = run_det(master, "user", "edit", name, "--admin", "true", "--active", "false")
    assert edited.exit_code == 0, edited.output
    assert edited.output == "Changes made to the following fields: Active, Admin\n"
    again = client.get_user_by_name(name)
    assert again.admin and not again.active
    active_only = run_det(master, "user", "list", "--csv").output
    assert f",{name}," not in active_only
    assert f",{name}," in run_det(master, "user", "list", "--all", "--csv").output

    nothing = run_det(master, "user", "edit", name)
    assert nothing.exit_code == 2 and "No field provided" in nothing.output
    display = run_det(master, "user", "edit", name, "--display-name", "Someone")
    assert display.exit_code == 1 and "display names" in display.output

    renamed = run_pedl(master, "user", "rename", name, f"{name}-new")
    assert renamed.exit_code == 0, renamed.output
    assert client.get_user_by_id(again.user_id or 0).username == f"{name}-new"
    taken = run_det(master, "user", "rename", f"{name}-new", "admin")
    assert taken.exit_code == 1 and "already exists" in taken.output
    missing = run_det(master, "user", "edit", f"{name}-gone", "--admin", "false")
    assert missing.exit_code == 1 and "not found" in missing.output


def test_logout_all(master: LiveMaster) -> None:
    me = run_det(master, "user", "whoami")
    assert me.exit_code == 0 and me.output == "You are logged in as user 'admin'\n"
    out = run_det(master, "user", "logout", "--all")
    assert out.exit_code == 0, out.output
    assert run_det(master, "user", "whoami").exit_code == 0  # PEDL_USER signs in again
