"""``pedl tensorboard ...``: TensorBoards the master runs over experiments and trials."""

from __future__ import annotations

import webbrowser
from typing import Any

import click
import yaml
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
from pedl.client._tensorboard import (
    get_tensorboard,
    list_tensorboards,
    start_tensorboard,
    stop_tensorboard,
    tensorboard_logs,
)


@click.group("tensorboard", cls=AliasGroup)
def tensorboard() -> None:
    """Start, list and stop TensorBoards (served by the master, behind its sign-in)."""


_TRIAL_FLAGS = ("-t", "--trial-ids")


def _ids(args: tuple[str, ...]) -> tuple[list[int], list[int]]:
    """Determined's form: experiment ids, then ``-t``/``--trial-ids`` and trial ids."""
    experiments: list[int] = []
    trials: list[int] = []
    target = experiments
    for arg in args:
        if arg in _TRIAL_FLAGS:
            target = trials
            continue
        if not arg.isdigit() or int(arg) < 1:
            what = "a trial" if target is trials else "an experiment"
            raise click.BadParameter(f"{arg!r} is not {what} id (a positive integer)")
        target.append(int(arg))
    return experiments, trials


@tensorboard.command("start", context_settings={"ignore_unknown_options": True})
@click.option("-d", "--detach", is_flag=True, help="Print the id at once; do not wait for it.")
@click.option("--no-browser", is_flag=True, help="det's: open no browser (PEDL never opens one).")
@click.option(
    "--config-file",
    type=click.File("r"),
    default=None,
    help="det's task config: not used (PEDL's TensorBoards run on the master; a warning).",
)
@click.option(
    "--config",
    "config_overrides",
    multiple=True,
    metavar="KEY=VALUE",
    help="det's task config override: not used (a warning).",
)
@click.option(
    "-c",
    "--context",
    type=click.Path(exists=True, file_okay=False),
    default=None,
    help="det's context directory: not used (a warning).",
)
@click.option("-i", "--include", "includes", multiple=True, help="det's: not used (a warning).")
@click.argument(
    "ids", nargs=-1, type=click.UNPROCESSED, metavar="EXPERIMENT_ID... [-t TRIAL_ID...]"
)
def start(
    ids: tuple[str, ...],
    detach: bool,
    no_browser: bool,
    config_file: Any,
    config_overrides: tuple[str, ...],
    context: str | None,
    includes: tuple[str, ...],
) -> None:
    """Start a TensorBoard over the trials of experiments (their best 100 each) and/or the
    trials after -t/--trial-ids (at most 100 in all); print its address once it serves. It
    stays up to date while the trials run, until `pedl tensorboard stop ID`."""
    ignored = [
        name
        for name, given in (
            ("--config-file", config_file is not None),
            ("--config", bool(config_overrides)),
            ("--context", context is not None),
            ("--include", bool(includes)),
        )
        if given
    ]
    if ignored:
        click.echo(
            f"Warning: {', '.join(ignored)} not used: PEDL's TensorBoards are processes of "
            "the master, with no task config or context of their own",
            err=True,
        )
    experiment_ids, trial_ids = _ids(ids)
    if not experiment_ids and not trial_ids:
        raise click.UsageError("name experiment ids, or trial ids after --trial-ids")
    board = start_tensorboard(experiment_ids, trial_ids, wait=not detach, client=current_client())
    if detach:
        click.echo(board.id)
        return
    console().print(f"TensorBoard {board.id} is running at: {board.url}")
    console().print("(open it signed in: the web UI's TensorBoard button, or your session token)")


@tensorboard.command("list")
@json_option
@csv_option
def list_(as_json: bool, as_csv: bool) -> None:
    """List the master's TensorBoards."""
    boards = list_tensorboards(client=current_client())
    if as_json:
        print_json([b.model_dump(mode="json") for b in boards])
        return
    if as_csv or det_output():
        print_det_table(det_tables.tensorboards(boards), as_csv)
        return
    if not boards:
        console().print("No TensorBoards (start one: pedl tensorboard start EXPERIMENT_ID)")
        return
    table = Table("id", "owner", "state", "experiments", "trials", "address", title="TensorBoards")
    for b in boards:
        table.add_row(
            b.id,
            b.owner,
            b.state if b.error is None else f"{b.state}: {b.error}",
            ", ".join(map(str, b.experiment_ids)),
            ", ".join(map(str, b.trial_ids)),
            b.url,
        )
    console().print(table)


@tensorboard.command("open")
@click.argument("tensorboard_id")
def open_(tensorboard_id: str) -> None:
    """Print a TensorBoard's address and open it in a browser, where there is one (sign in
    to the web UI first: the TensorBoard is behind the master's sign-in)."""
    board = get_tensorboard(tensorboard_id, client=current_client())
    click.echo(board.url)
    webbrowser.open(board.url)


@tensorboard.command("config")
@click.argument("tensorboard_id")
def config(tensorboard_id: str) -> None:
    """Show what a TensorBoard shows and how it runs, as YAML (det's task config)."""
    board = get_tensorboard(tensorboard_id, client=current_client())
    shown = board.model_dump(mode="json")
    click.echo(yaml.safe_dump(shown, sort_keys=False, default_flow_style=False), nl=False)


@tensorboard.command("logs")
@click.argument("tensorboard_id")
@click.option("--tail", type=click.IntRange(1, 50), default=None, help="The last N lines only.")
@click.option("-f", "--follow", is_flag=True, help="det's: PEDL prints the lines it kept.")
def logs(tensorboard_id: str, tail: int | None, follow: bool) -> None:
    """Print a TensorBoard's own output (the latest lines the master kept), as det's
    ``tensorboard logs`` does."""
    for line in tensorboard_logs(tensorboard_id, tail=tail, client=current_client()):
        click.echo(line)


@tensorboard.command("stop")
@click.argument("tensorboard_ids", nargs=-1, required=True)
@click.option("-f", "--force", is_flag=True, help="det's: stop it at once (PEDL always does).")
def stop(tensorboard_ids: tuple[str, ...], force: bool) -> None:
    """Stop TensorBoards (each one's process ends)."""
    for board_id in tensorboard_ids:
        board = stop_tensorboard(board_id, client=current_client())
        console().print(f"TensorBoard {board.id} stopped")


tensorboard.add_command(stop, "kill")  # Determined's verb
