"""What the ``pedl`` group hands its commands: the master's address and a lazily made SDK client."""

from __future__ import annotations

import json
from typing import Any

import click
from rich.console import Console

from pedl.client import Client


class CliContext:
    """``ctx.obj`` of every ``pedl`` command. The client is made on first use, so local-mode
    commands never touch the network."""

    def __init__(self, master: str | None = None) -> None:
        self.master = master
        self._client: Client | None = None

    @property
    def client(self) -> Client:
        if self._client is None:
            self._client = Client(self.master)
        return self._client

    def close(self) -> None:
        if self._client is not None:
            self._client.close()
            self._client = None


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
