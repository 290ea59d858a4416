"""What the ``pedl`` group hands its commands: the master's address and a lazily made SDK client."""

from __future__ import annotations

import json
import os
from typing import TYPE_CHECKING, Any

import click
from rich.console import Console

from pedl import client as sdk
from pedl.cli._presto import tabulate_or_csv

if TYPE_CHECKING:
    from pedl.client import Client


class CliContext:
    """``ctx.obj`` of every ``pedl`` command. The client is made on first use, so local-mode
    commands never touch the network, and ``pedl --help`` imports no HTTP client (``pedl.client``
    imports a name's module when the name is first used)."""

    def __init__(
        self, master: str | None = None, *, det: bool = False, user: str | None = None
    ) -> None:
        self.master = master
        self.det = det
        """The command runs as ``det``: it prints what Determined's ``det`` prints."""
        self.user = user
        """``det -u USER``: run as this user (signed in with ``DET_PASS``/``PEDL_PASSWORD``,
        a saved token of that user, else the password asked for)."""
        self._client: Client | None = None

    @property
    def client(self) -> Client:
        if self._client is None:
            password = None
            if self.user is not None:
                os.environ[sdk.USER_ENV] = self.user
                password = os.environ.get(sdk.PASSWORD_ENV) or os.environ.get(sdk.DET_PASSWORD_ENV)
                if password:
                    os.environ[sdk.PASSWORD_ENV] = password
            self._client = sdk.Client(self.master)
            if self.user is not None and not password:
                saved = self._client.session.tokens.get(self._client.master)
                if saved is None or saved.username != self.user:
                    os.environ[sdk.PASSWORD_ENV] = click.prompt(
                        f"Password for user '{self.user}'", hide_input=True
                    )
        return self._client

    def close(self) -> None:
        if self._client is not None:
            self._client.close()
            self._client = None


def det_output() -> bool:
    """Whether the running command prints as Determined's ``det`` (it runs as ``det``)."""
    obj = click.get_current_context().find_object(CliContext)
    return obj is not None and obj.det


def current_client() -> Client:
    """The SDK client of the running ``pedl`` command."""
    return click.get_current_context().ensure_object(CliContext).client


PLAIN_WIDTH = 100_000
"""The width of a console that is not a terminal: wide enough that no table wraps or cuts."""


def console(*, stderr: bool = False) -> Console:
    """The console commands print to (no wrapping of long lines: output stays greppable).

    On a terminal: rich's colours (none with ``NO_COLOR`` set) and its width. Otherwise (a
    pipe, a file; rich's ``FORCE_COLOR``/``TTY_COMPATIBLE`` say otherwise): plain text, no
    escape codes, and tables as wide as their contents, so ids and UUIDs are never cut.
    """
    terminal = Console(soft_wrap=True, stderr=stderr)
    if terminal.is_terminal:
        return terminal
    return Console(
        soft_wrap=True,
        stderr=stderr,
        color_system=None,
        no_color=True,
        width=PLAIN_WIDTH,
        highlight=False,
        emoji=False,
    )


def print_json(data: Any) -> None:
    """``data`` as indented JSON on stdout (for ``--json``), its keys in the order the master
    sent them: a config's hyperparameters in the order the user wrote them."""
    click.echo(json.dumps(data, indent=2, default=str))


json_option = click.option("--json", "as_json", is_flag=True, help="Print JSON instead of a table.")

csv_option = click.option(
    "--csv", "as_csv", is_flag=True, help="Print det's table as CSV (det's columns)."
)
"""det's ``--csv``: the table that ``det`` prints, as CSV (``pedl`` too)."""


def pagination_options(command: Any) -> Any:
    """det's ``--limit``, ``--offset`` and ``--pages`` (``determined.cli._util``'s
    ``make_pagination_args``): skip ``--offset`` items, then all the rest (``--pages all``, the
    default) or one page of ``--limit`` (``--pages 1``)."""
    command = click.option(
        "--pages",
        type=click.Choice(["1", "all"]),
        default="all",
        show_default=True,
        help="'all': every item from --offset on; '1': one page of --limit items.",
    )(command)
    command = click.option(
        "--offset",
        type=click.IntRange(min=0),
        default=0,
        show_default=True,
        help="Items to skip before the first one shown.",
    )(command)
    return click.option(
        "--limit",
        type=click.IntRange(min=1),
        default=200,
        show_default=True,
        help="Items per page (with --pages 1: the most shown).",
    )(command)


def paginate(items: list[Any], limit: int, offset: int, pages: str) -> list[Any]:
    """``items`` as det's ``--limit``/``--offset``/``--pages`` select them."""
    return items[offset:] if pages == "all" else items[offset : offset + limit]


def print_det_table(table: tuple[list[str], list[list[Any]]], as_csv: bool) -> None:
    """A table of :mod:`pedl.cli._det_tables` as ``det`` prints it: presto, or CSV."""
    headers, rows = table
    click.echo(tabulate_or_csv(headers, rows, as_csv), nl=False)
