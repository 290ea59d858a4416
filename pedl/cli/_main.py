"""The ``pedl`` command."""

from __future__ import annotations

import importlib
import logging
import os
from typing import Any

import click

import pedl
from pedl.cli import (
    _experiment_manage,  # noqa: F401  (adds det's verbs to `experiment`)
    _trial_download,  # noqa: F401  (adds `trial download`)
)
from pedl.cli._aliases import ALIASES, AliasGroup
from pedl.cli._checkpoint import checkpoint
from pedl.cli._cluster import MASTER_VIEWS, agent, job, master_views, slot
from pedl.cli._context import CliContext
from pedl.cli._experiment import experiment
from pedl.cli._model import model
from pedl.cli._template import template
from pedl.cli._tensorboard import tensorboard
from pedl.cli._trial import trial
from pedl.cli._user import user
from pedl.client import DET_MASTER_ENV, MASTER_ENV, PEDLError


class _PedlGroup(AliasGroup):
    """Turns SDK errors into a one-paragraph message and exit status 1 (no traceback).

    Commands in ``LAZY_COMMANDS`` are imported only when run (click's lazy-group pattern):
    ``pedl master`` pulls in the whole server stack, which no other command needs.
    """

    LAZY_COMMANDS = {
        "master": (
            "pedl.cli._master",
            "master",
            "Run the master (`pedl master info`: show the one at --master).",
        )
    }

    def list_commands(self, ctx: click.Context) -> list[str]:
        return sorted([*super().list_commands(ctx), *self.LAZY_COMMANDS])

    def get_command(self, ctx: click.Context, name: str) -> click.Command | None:
        name = name if name in self.LAZY_COMMANDS or name not in ALIASES else ALIASES[name]
        if name in self.LAZY_COMMANDS:
            module, attribute, _ = self.LAZY_COMMANDS[name]
            command: click.Command = getattr(importlib.import_module(module), attribute)
            return command
        return super().get_command(ctx, name)

    def resolve_command(
        self, ctx: click.Context, args: list[str]
    ) -> tuple[str | None, click.Command | None, list[str]]:
        # `pedl master info` (det's): the views; `pedl master [OPTIONS]`: run a master.
        if len(args) > 1 and args[0] == "master" and args[1] in MASTER_VIEWS:
            return "master", master_views, args[1:]
        return super().resolve_command(ctx, args)

    def format_commands(self, ctx: click.Context, formatter: click.HelpFormatter) -> None:
        rows = [(name, help_text) for name, (_, _, help_text) in self.LAZY_COMMANDS.items()]
        for name, command in self.commands.items():
            rows.append((name, command.get_short_help_str()))
        with formatter.section("Commands"):
            formatter.write_dl(sorted(rows))

    def invoke(self, ctx: click.Context) -> Any:
        try:
            return super().invoke(ctx)
        except PEDLError as err:
            raise click.ClickException(err.details()) from err
        finally:
            obj = ctx.find_object(CliContext)
            if obj is not None:
                obj.close()


@click.group(cls=_PedlGroup)
@click.version_option(pedl.__version__, prog_name="pedl")
@click.option("-v", "--verbose", is_flag=True, help="Log more.")
@click.option(
    "-m",
    "--master",
    envvar=[MASTER_ENV, DET_MASTER_ENV],
    default=None,
    metavar="URL",
    help=f"The master's address [{MASTER_ENV}, else {DET_MASTER_ENV}; http://127.0.0.1:8080].",
)
@click.pass_context
def cli(ctx: click.Context, verbose: bool, master: str | None) -> None:
    """PEDL: hyperparameter search and exact-resume training for TensorFlow and Keras."""
    os.environ.setdefault("TF_CPP_MIN_LOG_LEVEL", "2")
    logging.basicConfig(
        level=logging.DEBUG if verbose else logging.INFO,
        format="%(asctime)s %(levelname)s %(name)s: %(message)s",
    )
    if not verbose:
        for chatty in ("httpx", "httpcore"):  # one line per request
            logging.getLogger(chatty).setLevel(logging.WARNING)
    ctx.obj = CliContext(master)


cli.add_command(experiment)
cli.add_command(trial)
cli.add_command(checkpoint)
cli.add_command(model)
cli.add_command(user)
cli.add_command(template)
cli.add_command(tensorboard)
cli.add_command(job)
cli.add_command(slot)
cli.add_command(agent)


@cli.command("version")
@click.pass_context
def version(ctx: click.Context) -> None:
    """Show the versions of this client and of the master (``det version``)."""
    click.echo(f"client: {pedl.__version__}")
    obj = ctx.ensure_object(CliContext)
    try:
        info = obj.client.session.get("/master")
    except PEDLError as err:
        click.echo(f"master: unknown ({err})")
        return
    click.echo(f"master: {info.get('version', 'unknown')}")
    click.echo(f"master_address: {obj.client.master}")
