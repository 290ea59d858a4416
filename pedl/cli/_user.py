"""``pedl user ...``: signing in to the master and managing its accounts."""

from __future__ import annotations

from typing import Any

import click
from rich.table import Table

from pedl.cli import _det_tables as det_tables
from pedl.cli._aliases import AliasGroup
from pedl.cli._context import (
    console,
    csv_option,
    current_client,
    det_output,
    json_option,
    print_det_table,
    print_json,
)
from pedl.client import PASSWORD_ENV, User, env_credentials

USERNAME = click.argument("username")


@click.group("user", cls=AliasGroup)
def user() -> None:
    """Sign in and out; manage accounts (create, list, deactivate: administrators)."""


@user.command("login")
@click.argument("username", required=False)
def login(username: str | None) -> None:
    """Sign in to the master (asks for the password) and keep the session's token, readable
    by you only, in your config directory ($PEDL_CONFIG_DIR, else $XDG_CONFIG_HOME/pedl or
    ~/.config/pedl). PEDL_USER and PEDL_PASSWORD, when set, sign in without it."""
    name = username or click.prompt("Username")
    password = click.prompt(f"Password for {name}", hide_input=True)
    client = current_client()
    signed_in = client.login(name, password)
    role = " (administrator)" if signed_in.admin else ""
    console().print(f"Signed in to {client.master} as [bold]{signed_in.username}[/bold]{role}")


@user.command("logout")
@click.option(
    "--all",
    "-a",
    "everyone",
    is_flag=True,
    help="det's: sign out of every saved session of this master (PEDL keeps one).",
)
def logout(everyone: bool) -> None:
    """Sign out: the saved token stops working and is forgotten."""
    client = current_client()
    client.logout()
    console().print(f"Signed out of {client.master}")


@user.command("whoami")
@json_option
def whoami(as_json: bool) -> None:
    """Show the signed-in user."""
    me = current_client().whoami()
    if as_json:
        print_json(_record(me))
        return
    if det_output():
        click.echo(f"You are logged in as user '{me.username}'")
        return
    role = " (administrator)" if me.admin else ""
    console().print(f"{me.username}{role}")


@user.command("list")
@click.option(
    "--all", "-a", "everyone", is_flag=True, help="det's: deactivated accounts too (det's list)."
)
@json_option
@csv_option
def list_users(everyone: bool, as_json: bool, as_csv: bool) -> None:
    """List every account (administrators only); ``det user list`` the active ones unless
    --all, as det does."""
    users = current_client().list_users(None if everyone or not det_output() else True)
    if as_json:
        print_json([_record(u) for u in users])
        return
    if as_csv or det_output():
        print_det_table(det_tables.users(users), as_csv)
        return
    table = Table(title="Users")
    for column in ("username", "admin", "active", "created"):
        table.add_column(column)
    for u in users:
        created = u.created_at.strftime("%Y-%m-%d %H:%M:%S")
        table.add_row(u.username, _yes(u.admin), _yes(u.active), created)
    console().print(table)


@user.command("create")
@USERNAME
@click.option("--admin", is_flag=True, help="Make the account an administrator.")
@click.option("--password", default=None, help="Its password (asked for, twice, when left out).")
@click.option(
    "--remote", is_flag=True, hidden=True, help="det's SSO accounts: refused (PEDL has none)."
)
def create(username: str, admin: bool, password: str | None, remote: bool) -> None:
    """Create an account (administrators only; asks for its password unless --password)."""
    if password is None and not remote:
        password = click.prompt(
            f"Password for {username}", hide_input=True, confirmation_prompt=True
        )
    created = current_client().create_user(username, admin=admin, password=password, remote=remote)
    role = "administrator" if created.admin else "user"
    console().print(f"Created {role} [bold]{created.username}[/bold]")


@user.command("change-password")
@click.argument("username", required=False)
def change_password(username: str | None) -> None:
    """Change your password (asks for the current one), or, as an administrator, USERNAME's.
    The account's other sessions end."""
    client = current_client()
    me = client.whoami().username
    target = username or me
    old_password = None
    if target == me:
        old_password = click.prompt("Current password", hide_input=True)
    password = click.prompt(f"New password for {target}", hide_input=True, confirmation_prompt=True)
    client.change_password(password, username=target, old_password=old_password)
    console().print(f"Changed the password of [bold]{target}[/bold]")
    if target == me and _from_environment(me):
        console(stderr=True).print(f"Remember to change {PASSWORD_ENV} too.")


@user.command("deactivate")
@USERNAME
def deactivate(username: str) -> None:
    """Deactivate an account (administrators only): it can no longer sign in, its sessions
    end, its experiments stay."""
    current_client().deactivate_user(username)
    console().print(f"Deactivated [bold]{username}[/bold]")


@user.command("activate")
@USERNAME
def activate(username: str) -> None:
    """Let a deactivated account sign in again (administrators only)."""
    current_client().activate_user(username)
    console().print(f"Activated [bold]{username}[/bold]")


@user.command("rename")
@click.argument("target_user")
@click.argument("new_username")
def rename(target_user: str, new_username: str) -> None:
    """Rename an account, and the owner of all it owns (administrators only)."""
    current_client().get_user_by_name(target_user).rename(new_username)
    console().print(f"Renamed [bold]{target_user}[/bold] to [bold]{new_username}[/bold]")


def _bool_choice(name: str, help_text: str) -> Any:
    return click.option(
        name, type=click.Choice(["true", "false"], case_sensitive=False), help=help_text
    )


@user.command("edit")
@click.argument("target_user")
@click.option("--username", "new_username", default=None, help="A new username.")
@_bool_choice("--active", "Activate (true) or deactivate (false) it.")
@_bool_choice("--admin", "Grant (true) or take away (false) the administrator role.")
@click.option("--display-name", default=None, help="det's: refused (PEDL keeps none).")
@_bool_choice("--remote", "det's SSO flag: refused when true (PEDL has no remote accounts).")
def edit(
    target_user: str,
    new_username: str | None,
    active: str | None,
    admin: str | None,
    display_name: str | None,
    remote: str | None,
) -> None:
    """Change an account's username, active flag or administrator role (administrators
    only), as ``det user edit``; prints the fields changed."""
    if remote == "true":
        raise click.BadParameter("PEDL has no remote (SSO) accounts", param_hint="--remote")
    changes: dict[str, Any] = {}
    names = []
    if display_name is not None:
        changes["display_name"] = display_name
        names.append("Display Name")
    if active is not None:
        changes["active"] = active == "true"
        names.append("Active")
    if new_username is not None:
        changes["username"] = new_username
        names.append("Username")
    if admin is not None:
        changes["admin"] = admin == "true"
        names.append("Admin")
    if not changes:
        raise click.UsageError("No field provided. Use 'det user edit -h' for usage.")
    client = current_client()
    client.get_user_by_name(target_user)  # 404 names the user
    client.session.patch(f"/users/{target_user}", json=changes)
    click.echo("Changes made to the following fields: " + ", ".join(names))


def _record(u: User) -> dict[str, object]:
    return {
        "user_id": u.user_id,
        "username": u.username,
        "admin": u.admin,
        "active": u.active,
        "created_at": u.created_at.isoformat(),
    }


def _yes(value: bool) -> str:
    return "yes" if value else "no"


def _from_environment(username: str) -> bool:
    user, password = env_credentials()
    return user == username and bool(password)
