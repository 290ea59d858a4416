"""``pedl checkpoint ...``: one checkpoint on the master: describe, download, delete."""

from __future__ import annotations

from pathlib import Path

import click

from pedl.cli._aliases import AliasGroup
from pedl.cli._context import console, current_client, json_option, print_json
from pedl.cli._display import format_size, print_metadata
from pedl.cli._tables import checkpoint_table
from pedl.client import PEDLError

CHECKPOINT_UUID = click.argument("uuid")


@click.group("checkpoint", cls=AliasGroup)
def checkpoint() -> None:
    """Inspect, download and delete checkpoints."""


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
    print_metadata(out, c.metadata)
    if c.resources:
        out.print("files:")
    for path, size in sorted(c.resources.items()):
        out.print(f"  {format_size(size):>10}  {path}", markup=False, highlight=False)


@checkpoint.command("download")
@CHECKPOINT_UUID
@click.option(
    "-o",
    "--output-dir",
    type=click.Path(file_okay=False, path_type=Path),
    default=None,
    help="Where the files go; default checkpoints/<uuid>.",
)
@click.option(
    "--mode",
    type=click.Choice(["direct", "master", "auto"]),
    default="auto",
    show_default=True,
    help="direct: from the checkpoint storage (a path readable here); master: through the "
    "master; auto: direct where it can, else through the master.",
)
@click.option("-q", "--quiet", is_flag=True, help="Only print the path to the checkpoint.")
def download(uuid: str, output_dir: Path | None, mode: str, quiet: bool) -> None:
    """Download a checkpoint's files."""
    c = current_client().get_checkpoint(uuid)
    path = c.download(output_dir, mode=mode)
    if quiet:
        click.echo(str(path))
        return
    console().print(f"Checkpoint {c.uuid} -> {path}")


@checkpoint.command("rm")
@click.argument("uuids")
@click.option(
    "--glob",
    "globs",
    multiple=True,
    help="Remove the files matching it (repeatable; `*` matches `/` too); none: nothing is "
    "removed and the checkpoint's files are read again from storage.",
)
@click.option("--yes", "-y", is_flag=True, help="Do not ask for confirmation.")
def remove_files(uuids: str, globs: tuple[str, ...], yes: bool) -> None:
    """Remove files from checkpoints in storage (UUIDS comma-separated), as ``det
    checkpoint rm``; a checkpoint left with no file is DELETED."""
    wanted = [u.strip() for u in uuids.split(",") if u.strip()]
    if globs and not yes:
        click.confirm(
            "All files matching the globs will be deleted from these checkpoints in storage. "
            "Proceed?",
            abort=True,
        )
    client = current_client()
    for uuid in wanted:
        c = client.get_checkpoint(uuid)
        c.remove_files(list(globs))
        click.echo(f"Checkpoint {c.uuid}: {len(c.resources)} file(s) left ({c.state})")


@checkpoint.command("delete")
@click.argument("uuids", nargs=-1, required=True)
@click.option("--yes", "-y", is_flag=True, help="Do not ask for confirmation.")
def delete(uuids: tuple[str, ...], yes: bool) -> None:
    """Delete checkpoints' files from storage (UUIDS: one or more, or comma-separated); they
    stay listed as DELETED. A checkpoint registered in the model registry, or the latest of a
    trial that may still run, is refused with the reason."""
    wanted = list(dict.fromkeys(u.strip() for value in uuids for u in value.split(",") if u))
    if not yes:
        click.confirm(
            f"Delete the files of {len(wanted)} checkpoint(s)? This cannot be undone", abort=True
        )
    client = current_client()
    out, err = console(), console(stderr=True)
    failed = 0
    for uuid in wanted:
        try:
            client.get_checkpoint(uuid).delete()
        except PEDLError as error:
            failed += 1
            err.print(f"Checkpoint {uuid} not deleted: {error}")
            continue
        out.print(f"Deleted checkpoint {uuid}")
    if failed:
        raise SystemExit(1)
