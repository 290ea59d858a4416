"""The ``det`` command: ``pedl``'s commands as Determined 0.38.1's ``det`` takes and prints them.

The same commands (:data:`pedl.cli._main.COMMANDS`, det's abbreviations from
:mod:`pedl.cli._aliases`), under det's global options: ``-m/--master`` (``DET_MASTER``, with or
without a scheme), ``-u/--user`` and ``-v/--version``. Lists and describes print det's tables
(tabulate's "presto" format, det's columns, ``--csv``). Groups PEDL does not have (notebooks,
shells, commands, tasks, deploy) end with one line naming what to use instead.
"""

from __future__ import annotations

from typing import Any

import click
import yaml

import pedl
from pedl.cli._context import CliContext
from pedl.cli._main import PedlGroup, configure_logging
from pedl.client import DET_MASTER_ENV, MASTER_ENV, PEDLError

UNSUPPORTED: dict[str, str] = {
    "notebook": "PEDL has no notebooks: run Jupyter where you like and reach the master with "
    "the SDK (`from determined.experimental import client`).",
    "shell": "PEDL has no shells: train with `det experiment create`, and read a trial's "
    "output with `det trial logs`.",
    "command": "PEDL has no commands: run your program as an experiment "
    "(`det experiment create`), or locally with `pedl experiment create --local`.",
    "task": "PEDL has no generic tasks: use `det experiment list`, `det job list` and "
    "`det tensorboard list`.",
    "deploy": "PEDL deploys no clusters: start a master with `pedl master` (its resource "
    "manager `local`, or `ray` on an existing Ray cluster).",
}
"""det's groups that PEDL lacks -> the one line ``det`` prints for them (exit status 1)."""

UNSUPPORTED_ALIASES = {"cmd": "command"}


def _unsupported(name: str) -> click.Command:
    message = UNSUPPORTED[name]

    def callback(args: tuple[str, ...]) -> None:
        click.echo(f"det {name}: {message}", err=True)
        raise SystemExit(1)

    return click.Command(
        name,
        callback=callback,
        params=[click.Argument(["args"], nargs=-1, type=click.UNPROCESSED)],
        context_settings={"ignore_unknown_options": True, "allow_extra_args": True},
        add_help_option=False,
        help=f"Not in PEDL. {message}",
        hidden=True,
    )


class DetGroup(PedlGroup):
    """``pedl``'s group with det's groups that PEDL lacks answered by one line each."""

    def get_command(self, ctx: click.Context, name: str) -> click.Command | None:
        name = UNSUPPORTED_ALIASES.get(name, name)
        if name in UNSUPPORTED:
            return _unsupported(name)
        return super().get_command(ctx, name)


@click.group(cls=DetGroup, context_settings={"help_option_names": ["-h", "--help"]})
@click.version_option(
    pedl.__version__, "-v", "--version", prog_name="det", message="%(prog)s %(version)s"
)
@click.option(
    "-m",
    "--master",
    envvar=[DET_MASTER_ENV, MASTER_ENV],
    default=None,
    metavar="address",
    help=f"The master's address [{DET_MASTER_ENV}, else {MASTER_ENV}; http://127.0.0.1:8080]; "
    "the scheme may be left out.",
)
@click.option("-u", "--user", default=None, metavar="username", help="Run as the given user.")
@click.pass_context
def det(ctx: click.Context, master: str | None, user: str | None) -> Any:
    """PEDL as Determined's `det`: det's commands, options and output."""
    configure_logging(False)
    ctx.obj = CliContext(master, det=True, user=user)


@det.command("version")
@click.pass_context
def version(ctx: click.Context) -> None:
    """Show the versions of this client and of the master, as YAML (det's
    ``describe_version``; the master's is empty when it cannot be reached)."""
    obj = ctx.ensure_object(CliContext)
    master: dict[str, Any] = {"cluster_id": "", "master_id": "", "version": ""}
    try:
        info = obj.client.session.get("/master")
        master["version"] = str(info.get("version", ""))
    except PEDLError:
        pass
    shown = {
        "client": {"version": pedl.__version__},
        "master": master,
        "master_address": obj.client.master,
    }
    click.echo(yaml.safe_dump(shown, default_flow_style=False))
