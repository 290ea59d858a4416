"""The ``pedl`` command."""

from __future__ import annotations

import importlib
import logging
import os
from typing import Any

import click

import pedl
from pedl.cli._aliases import ALIASES, AliasGroup
from pedl.cli._context import CliContext
from pedl.client import DET_MASTER_ENV, MASTER_ENV, PEDLError

COMMANDS: dict[str, tuple[str, str, str]] = {
    # name: (module, attribute, help as `pedl --help` lists it)
    "agent": (
        "pedl.cli._cluster",
        "agent",
        "Inspect the agents (a PEDL master is its own one agent).",
    ),
    "checkpoint": (
        "pedl.cli._checkpoint",
        "checkpoint",
        "Inspect, download and delete checkpoints.",
    ),
    # _experiment_manage adds det's verbs to `experiment`, _trial_download `trial download`.
    "experiment": ("pedl.cli._experiment_manage", "experiment", "Create and manage experiments."),
    "job": ("pedl.cli._cluster", "job", "Inspect the job queue (running and queued trials)."),
    "master": (
        "pedl.cli._master",
        "master",
        "Run the master (`pedl master info`: show the one at --master).",
    ),
    "model": (
        "pedl.cli._model",
        "model",
        "Name trained checkpoints in the model registry (alone: list the models).",
    ),
    "slot": ("pedl.cli._cluster", "slot", "Inspect the master's slots."),
    "template": (
        "pedl.cli._template",
        "template",
        "Manage config templates (merged under an experiment's config with "
        "`pedl experiment create --template NAME`).",
    ),
    "tensorboard": (
        "pedl.cli._tensorboard",
        "tensorboard",
        "Start, list and stop TensorBoards (served by the master, behind its sign-in).",
    ),
    "trial": ("pedl.cli._trial_download", "trial", "Inspect trials on the master."),
    "workspace": (
        "pedl.cli._workspace",
        "workspace",
        "Manage workspaces (each holds projects, which hold experiments).",
    ),
    "project": (
        "pedl.cli._project",
        "project",
        "Manage projects (each in a workspace, each holding experiments).",
    ),
    "user": (
        "pedl.cli._user",
        "user",
        "Sign in and out; manage accounts (create, list, deactivate: administrators).",
    ),
}
"""The ``pedl`` command's groups, each imported only when it runs (click's lazy-group
pattern): ``pedl --help`` imports none, ``pedl experiment list`` the SDK and the tables but
not the server stack, which only ``pedl master`` (and a local run) loads."""

MASTER_VIEWS = ("pedl.cli._cluster", "master_views")
"""``pedl master VIEW`` (det's ``info``, ``config``, ``logs``): a group of their own."""


def load_command(module: str, attribute: str) -> click.Command:
    """The click command ``attribute`` of ``module``, importing the module."""
    command: click.Command = getattr(importlib.import_module(module), attribute)
    return command


def short_help(help_text: str) -> str:
    """``help_text`` as ``pedl --help`` lists a command with that help."""
    return click.Command(None, help=help_text).get_short_help_str()


class PedlGroup(AliasGroup):
    """Loads its commands when they run (:data:`COMMANDS`); turns SDK errors into a
    one-paragraph message and exit status 1 (no traceback)."""

    def list_commands(self, ctx: click.Context) -> list[str]:
        return sorted([*super().list_commands(ctx), *COMMANDS])

    def get_command(self, ctx: click.Context, name: str) -> click.Command | None:
        name = name if name in COMMANDS or name not in ALIASES else ALIASES[name]
        if name in COMMANDS:
            module, attribute, _ = COMMANDS[name]
            return load_command(module, attribute)
        return super().get_command(ctx, name)

    def resolve_command(
        self, ctx: click.Context, args: list[str]
    ) -> tuple[str | None, click.Command | None, list[str]]:
        # `pedl master info` (det's): the views; `pedl master [OPTIONS]`: run a master.
        if len(args) > 1 and args[0] == "master":
            views = load_command(*MASTER_VIEWS)
            if isinstance(views, click.Group) and args[1] in views.commands:
                return "master", views, args[1:]
        return super().resolve_command(ctx, args)

    def format_commands(self, ctx: click.Context, formatter: click.HelpFormatter) -> None:
        # Shortened as click shortens a loaded command's help (but for `master`'s, whole).
        rows = [
            (name, help_text if name == "master" else short_help(help_text))
            for name, (_, _, help_text) in COMMANDS.items()
        ]
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


@click.group(cls=PedlGroup)
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
    configure_logging(verbose)
    ctx.obj = CliContext(master)


def configure_logging(verbose: bool) -> None:
    """The CLI's log: INFO (DEBUG with ``verbose``), without the HTTP clients' request lines."""
    os.environ.setdefault("TF_CPP_MIN_LOG_LEVEL", "2")
    logging.basicConfig(
        level=logging.DEBUG if verbose else logging.INFO,
        format="%(asctime)s %(levelname)s %(name)s: %(message)s",
    )
    if not verbose:
        # httpx, httpcore: one line per request; alembic's plugins: one line each when a local
        # run imports the database layer (a master's or local run's own log says the rest).
        for chatty in ("httpx", "httpcore", "alembic.runtime.plugins"):
            logging.getLogger(chatty).setLevel(logging.WARNING)


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
