"""``pedl tensorboard ...``: TensorBoards the master runs over experiments and trials."""

from __future__ import annotations

import click
from rich.table import Table

from pedl.cli._aliases import AliasGroup
from pedl.cli._context import console, current_client, json_option, print_json
from pedl.client._tensorboard import (
    list_tensorboards,
    start_tensorboard,
    stop_tensorboard,
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
@click.argument(
    "ids", nargs=-1, type=click.UNPROCESSED, metavar="EXPERIMENT_ID... [-t TRIAL_ID...]"
)
def start(ids: tuple[str, ...], detach: bool) -> None:
    """Start a TensorBoard over the trials of experiments (their best 100 each) and/or the
    trials after -t/--trial-ids (at most 100 in all); print its address once it serves. It
    stays up to date while the trials run, until `pedl tensorboard stop ID`."""
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
def list_(as_json: bool) -> None:
    """List the master's TensorBoards."""
    boards = list_tensorboards(client=current_client())
    if as_json:
        print_json([b.model_dump(mode="json") for b in boards])
        return
    table = Table("ID", "Owner", "State", "Experiments", "Trials", "Address")
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


@tensorboard.command("stop")
@click.argument("tensorboard_ids", nargs=-1, required=True)
def stop(tensorboard_ids: tuple[str, ...]) -> None:
    """Stop TensorBoards (each one's process ends)."""
    for board_id in tensorboard_ids:
        board = stop_tensorboard(board_id, client=current_client())
        console().print(f"TensorBoard {board.id} stopped")


tensorboard.add_command(stop, "kill")  # Determined's verb
