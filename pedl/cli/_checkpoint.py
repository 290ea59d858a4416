"""``pedl checkpoint ...``: one checkpoint on the master."""

from __future__ import annotations

from pathlib import Path

import click

from pedl.cli._aliases import AliasGroup
from pedl.cli._context import console, current_client, json_option, print_json
from pedl.cli._tables import checkpoint_table

CHECKPOINT_UUID = click.argument("uuid")


@click.group("checkpoint", cls=AliasGroup)
def checkpoint() -> None:
    """Inspect and download checkpoints."""


@checkpoint.command("describe")
@CHECKPOINT_UUID
@json_option
def describe(uuid: str, as_json: bool) -> None:
    """Show a checkpoint and its files."""
    c = current_client().get_checkpoint(uuid)
    if as_json:
        print_json(c.to_dict())
        return
    out = console()
    out.print(checkpoint_table(c))
    for path, size in sorted(c.resources.items()):
        out.print(f"  {size:>12}  {path}")


@checkpoint.command("download")
@CHECKPOINT_UUID
@click.option(
    "-o",
    "--output-dir",
    type=click.Path(file_okay=False, path_type=Path),
    default=None,
    help="Where the files go; default checkpoints/<uuid>.",
)
def download(uuid: str, output_dir: Path | None) -> None:
    """Download a checkpoint's files."""
    c = current_client().get_checkpoint(uuid)
    path = c.download(output_dir)
    console().print(f"Checkpoint {c.uuid} -> {path}")
