"""The ``pedl`` command."""

from __future__ import annotations

import logging
import os

import click

import pedl
from pedl.cli._experiment import experiment


@click.group()
@click.version_option(pedl.__version__, prog_name="pedl")
@click.option("-v", "--verbose", is_flag=True, help="Log more.")
def cli(verbose: bool) -> None:
    """PEDL: hyperparameter search and exact-resume training for TensorFlow and Keras."""
    os.environ.setdefault("TF_CPP_MIN_LOG_LEVEL", "2")
    logging.basicConfig(
        level=logging.DEBUG if verbose else logging.INFO,
        format="%(asctime)s %(levelname)s %(name)s: %(message)s",
    )


cli.add_command(experiment)


def main() -> None:
    cli()
