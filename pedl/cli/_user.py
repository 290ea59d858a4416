"""``pedl user ...``: signing in to the master and managing its accounts."""

from __future__ import annotations

import click
from rich.table import Table

from pedl.cli._aliases import AliasGroup
from pedl.cli._context import console, current_client, json_option, print_json
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
def logout() -> None:
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
    role = " (administrator)" if me.admin else ""
    console().print(f"{me.username}{role}")


@user.command("list")
@json_option
def list_users(as_json: bool) -> None:
    """List every account (administrators only)."""
    users = current_client().list_users()
    if as_json:
        print_json([_record(u) for u in users])
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
def create(username: str, admin: bool) -> None:
    """Create an account (administrators only; asks for its password)."""
    password = click.prompt(f"Password for {username}", hide_input=True, confirmation_prompt=True)
    created = current_client().create_user(username, password, admin=admin)
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


def _record(u: User) -> dict[str, object]:
    return {
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
