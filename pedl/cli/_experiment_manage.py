"""``det``'s experiment verbs in ``pedl experiment``: delete, archive, unarchive, label,
set, logs, config, download-model-def."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import click
import yaml

from pedl.cli._aliases import AliasGroup
from pedl.cli._context import console, current_client
from pedl.cli._experiment import EXPERIMENT_ID, experiment
from pedl.cli._logs import log_options, print_logs


@experiment.command("delete")
@EXPERIMENT_ID
@click.option("--yes", "-y", is_flag=True, help="Do not ask for confirmation.")
def delete(experiment_id: int, yes: bool) -> None:
    """Delete an ended experiment: its records and its checkpoints' files in storage."""
    exp = current_client().get_experiment(experiment_id)
    if not yes:
        count = len(exp.list_checkpoints())
        click.confirm(
            f"Delete experiment {exp.id} ({exp.name or 'unnamed'}), its trials, metrics and "
            f"logs, and the files of its {count} checkpoint{'s' if count != 1 else ''}? "
            "This cannot be undone",
            abort=True,
        )
    exp.delete()
    console().print(f"Deleted experiment {exp.id}")


@experiment.command("archive")
@EXPERIMENT_ID
def archive(experiment_id: int) -> None:
    """Archive an ended experiment: `experiment list` leaves it out unless --all."""
    exp = current_client().get_experiment(experiment_id)
    exp.archive()
    console().print(f"Archived experiment {exp.id}")


@experiment.command("unarchive")
@EXPERIMENT_ID
def unarchive(experiment_id: int) -> None:
    """Undo `experiment archive`."""
    exp = current_client().get_experiment(experiment_id)
    exp.unarchive()
    console().print(f"Unarchived experiment {exp.id}")


@experiment.group("label", cls=AliasGroup)
def label() -> None:
    """Add or remove an experiment's labels."""


@label.command("add")
@EXPERIMENT_ID
@click.argument("label_text", metavar="LABEL")
def add_label(experiment_id: int, label_text: str) -> None:
    """Add LABEL to the experiment."""
    exp = current_client().get_experiment(experiment_id)
    exp.add_label(label_text)
    console().print(f"Experiment {exp.id} labels: {', '.join(exp.labels)}", markup=False)


@label.command("remove")
@EXPERIMENT_ID
@click.argument("label_text", metavar="LABEL")
def remove_label(experiment_id: int, label_text: str) -> None:
    """Remove LABEL from the experiment."""
    exp = current_client().get_experiment(experiment_id)
    exp.remove_label(label_text)
    console().print(f"Experiment {exp.id} labels: {', '.join(exp.labels) or '-'}", markup=False)


@experiment.group("set", cls=AliasGroup)
def set_group() -> None:
    """Change an experiment's name or description."""


@set_group.command("description")
@EXPERIMENT_ID
@click.argument("description")
def set_description(experiment_id: int, description: str) -> None:
    """Set the experiment's description."""
    exp = current_client().get_experiment(experiment_id)
    exp.set_description(description)
    console().print(f"Experiment {exp.id} description: {exp.description}", markup=False)


@set_group.command("name")
@EXPERIMENT_ID
@click.argument("name")
def set_name(experiment_id: int, name: str) -> None:
    """Rename the experiment."""
    exp = current_client().get_experiment(experiment_id)
    exp.set_name(name)
    console().print(f"Experiment {exp.id} name: {exp.name}", markup=False)


@experiment.command("logs")
@EXPERIMENT_ID
@log_options
def logs(experiment_id: int, **options: Any) -> None:
    """Print the logs of the experiment's first trial (as `det experiment logs` does)."""
    exp = current_client().get_experiment(experiment_id)
    trials = exp.list_trials()
    if not trials:
        raise click.ClickException(f"experiment {exp.id} has no trial yet")
    print_logs(trials[0], **options)


@experiment.command("config")
@EXPERIMENT_ID
def config(experiment_id: int) -> None:
    """Print the experiment's config (as the master stored it, defaults filled) as YAML."""
    exp = current_client().get_experiment(experiment_id)
    click.echo(yaml.safe_dump(exp.config, sort_keys=False), nl=False)


@experiment.command("download-model-def")
@EXPERIMENT_ID
@click.option(
    "-o",
    "--output-dir",
    type=click.Path(file_okay=False, path_type=Path),
    default=Path("."),
    show_default=True,
    help="Where experiment_<id>_model_def.tgz goes.",
)
def download_model_def(experiment_id: int, output_dir: Path) -> None:
    """Download the experiment's model definition as submitted (a .tgz archive)."""
    exp = current_client().get_experiment(experiment_id)
    output_dir.mkdir(parents=True, exist_ok=True)
    path = output_dir / f"experiment_{exp.id}_model_def.tgz"
    path.write_bytes(exp.model_definition())
    console().print(f"Model definition of experiment {exp.id} -> {path}", markup=False)
