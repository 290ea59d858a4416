"""``pedl trial download``: a trial's best or latest checkpoint (``det trial download``)."""

from __future__ import annotations

from pathlib import Path

import click

from pedl.cli._context import console, current_client
from pedl.cli._trial import trial
from pedl.client import PEDLError


@trial.command("download")
@click.argument("trial_id", type=click.IntRange(1, 2**31 - 1))
@click.option("--best", is_flag=True, help="The best checkpoint by --sort-by.")
@click.option("--latest", is_flag=True, help="The newest completed checkpoint.")
@click.option("--uuid", "uuid", default=None, help="This checkpoint of the trial.")
@click.option(
    "--sort-by",
    default=None,
    help="The validation metric that ranks checkpoints for --best (default: the searcher's).",
)
@click.option(
    "--smaller-is-better/--larger-is-better",
    default=None,
    help="How --sort-by ranks (default: the searcher's direction for its metric).",
)
@click.option(
    "-o",
    "--output-dir",
    type=click.Path(file_okay=False, path_type=Path),
    default=None,
    help="Where the files go; default checkpoints/<uuid>.",
)
def download(
    trial_id: int,
    best: bool,
    latest: bool,
    uuid: str | None,
    sort_by: str | None,
    smaller_is_better: bool | None,
    output_dir: Path | None,
) -> None:
    """Download one checkpoint of trial TRIAL_ID: exactly one of --best, --latest, --uuid."""
    if sum((best, latest, uuid is not None)) != 1:
        raise click.UsageError("give exactly one of --best, --latest or --uuid")
    found = current_client().get_trial(trial_id)
    try:
        checkpoint = found.select_checkpoint(
            latest=latest,
            best=best,
            uuid=uuid,
            sort_by=sort_by,
            smaller_is_better=smaller_is_better,
        )
    except ValueError as err:
        raise PEDLError(str(err)) from err
    if checkpoint is None:
        which = "best" if best else "latest"
        raise PEDLError(f"trial {trial_id} has no {which} checkpoint to download")
    path = checkpoint.download(output_dir)
    console().print(f"Local checkpoint path: {path}")
