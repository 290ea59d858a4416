"""``det``'s experiment verbs in ``pedl experiment``: delete, archive, unarchive, label,
set (name, description, max-slots, priority, weight, gc-policy, log-retention), logs, config,
download-model-def, continue, delete-tb-files."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import click
import yaml

from pedl.cli._aliases import AliasGroup
from pedl.cli._context import console, current_client, det_output
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
    left = exp.delete()
    console().print(f"Deleted experiment {exp.id}")
    for line in left:
        console().print(f"Not removed from storage: {line}", markup=False, style="yellow")


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
    """Change an experiment's name, description, scheduling, checkpoint or log retention."""


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


def _none_or_int(value: str) -> int | None:
    """``det``'s ``none_or_int``: ``none``/``null`` (any case) is no value."""
    if value.strip().lower() in ("none", "null"):
        return None
    try:
        return int(value)
    except ValueError as err:
        raise click.BadParameter(f"{value!r} is not an integer, none or null") from err


@set_group.command("max-slots")
@EXPERIMENT_ID
@click.argument("max_slots", metavar="MAX_SLOTS")
def set_max_slots(experiment_id: int, max_slots: str) -> None:
    """Cap the slots the experiment uses together (`none`: no cap)."""
    value = _none_or_int(max_slots)
    current_client().get_experiment(experiment_id).set_max_slots(value)
    console().print(f"Set `max_slots` of experiment {experiment_id} to {value}", markup=False)


@set_group.command("priority")
@EXPERIMENT_ID
@click.argument("priority", type=int)
def set_priority(experiment_id: int, priority: int) -> None:
    """Set the experiment's priority (1: first, to 99)."""
    current_client().get_experiment(experiment_id).set_priority(priority)
    console().print(f"Set `priority` of experiment {experiment_id} to {priority}", markup=False)


@set_group.command("weight")
@EXPERIMENT_ID
@click.argument("weight", type=float)
def set_weight(experiment_id: int, weight: float) -> None:
    """Set the experiment's fair-share weight (above 0)."""
    current_client().get_experiment(experiment_id).set_weight(weight)
    console().print(f"Set `weight` of experiment {experiment_id} to {weight}", markup=False)


@set_group.command("gc-policy")
@EXPERIMENT_ID
@click.option("--save-experiment-best", type=int, required=True, help="Best checkpoints kept.")
@click.option("--save-trial-best", type=int, required=True, help="Best per trial kept.")
@click.option("--save-trial-latest", type=int, required=True, help="Latest per trial kept.")
@click.option("--yes", "-y", is_flag=True, help="Do not ask for confirmation.")
def set_gc_policy(
    experiment_id: int,
    save_experiment_best: int,
    save_trial_best: int,
    save_trial_latest: int,
    yes: bool,
) -> None:
    """Set the experiment's checkpoint retention and delete what it no longer keeps."""
    exp = current_client().get_experiment(experiment_id)
    policy = {
        "save_experiment_best": save_experiment_best,
        "save_trial_best": save_trial_best,
        "save_trial_latest": save_trial_latest,
    }
    if not yes:
        doomed = exp.preview_gc(**policy)
        out = console()
        if doomed:
            out.print("The following checkpoints will be deleted by applying this GC policy:")
            for checkpoint in doomed:
                out.print(
                    f"  trial {checkpoint.trial_id}, batch {checkpoint.total_batches}: "
                    f"{checkpoint.uuid}",
                    markup=False,
                )
        out.print(f"This policy will delete {len(doomed)} checkpoints.")
        click.confirm(
            "Changing the checkpoint garbage collection policy of an experiment may result in "
            "the unrecoverable deletion of checkpoints. Do you wish to proceed?",
            abort=True,
        )
    exp.set_gc_policy(**policy)
    shown = "\n".join(f"  {key}: {value}" for key, value in policy.items())
    console().print(f"Set GC policy of experiment {exp.id} to\n{shown}", markup=False)


@experiment.command("continue")
@EXPERIMENT_ID
@click.option(
    "--config-file",
    type=click.Path(exists=True, dir_okay=False, path_type=Path),
    default=None,
    help="A YAML file of config fields to change (e.g. a longer searcher.max_length; single "
    "searcher only).",
)
@click.option(
    "--config",
    "overrides",
    multiple=True,
    metavar="KEY=VALUE",
    help="Change a config field, e.g. --config searcher.max_length.batches=2000 (repeatable; "
    "single searcher only).",
)
@click.option(
    "-f", "--follow-first-trial", is_flag=True, help="Follow the logs of its first trial."
)
def continue_experiment(
    experiment_id: int,
    config_file: Path | None,
    overrides: tuple[str, ...],
    follow_first_trial: bool,
) -> None:
    """Continue an ended single, grid or random search experiment.

    A single-trial experiment's trial trains on from its latest checkpoint (--config-file and
    --config may change its config, e.g. a longer searcher.max_length). A grid or random
    search (no config changes) keeps its completed trials, trains its unfinished ones
    (errored, canceled) again from their latest checkpoints as the same trials, and creates
    the trials it never created; refused for a search that completed with every trial
    completed."""
    # The config package (pydantic models: ~0.3 s of CPU) loads only for the verb that needs it.
    from pedl.config import ConfigError
    from pedl.config._overrides import overridden_document

    source: str | dict[str, Any] = (
        config_file.read_text(encoding="utf-8") if config_file is not None else {}
    )
    try:
        override = overridden_document(source, overrides)
    except ConfigError as err:
        raise click.UsageError(str(err)) from err
    if not isinstance(override, dict):
        raise click.UsageError(f"{config_file} does not hold a mapping of config fields")
    exp = current_client().get_experiment(experiment_id)
    exp.continue_experiment(override)
    console().print(f"Continued experiment {exp.id}")
    if follow_first_trial:
        trials = exp.list_trials()
        if trials:
            for line in trials[0].logs(follow=True):
                click.echo(line.message)


MAX_LOG_RETENTION_DAYS = 32_767
"""det's largest ``--days``."""


@set_group.command("log-retention")
@EXPERIMENT_ID
@click.option(
    "--days",
    "days",
    default=None,
    metavar="DAYS",
    help="Days to keep its trials' logs after it ends (-1 to 32767; -1: forever).",
)
@click.option("--forever", is_flag=True, help="Keep its trials' logs forever.")
def set_log_retention(experiment_id: int, days: str | None, forever: bool) -> None:
    """Set how long the experiment's trial logs are kept after it ends (`log-retention-days`);
    the master deletes them then (at once when that time has passed)."""
    if days is not None and forever:
        raise click.UsageError("argument --forever: not allowed with argument --days")
    count = None if days is None else _none_or_int(days)
    if not forever and count is None:
        raise click.ClickException(
            "Please provide an argument to set log retention. --days sets the number of days to"
            " retain logs from the end time of the task, eg. `det e set log-retention 1 --days 50`."
            " --forever retains logs indefinitely, eg.`det e set log-retention 1 --forever`."
        )
    if count is not None and not -1 <= count <= MAX_LOG_RETENTION_DAYS:
        raise click.ClickException(
            "Please provide a valid value for --days. The allowed range is between -1 and "
            f"{MAX_LOG_RETENTION_DAYS} days."
        )
    current_client().get_experiment(experiment_id).set_log_retention(-1 if forever else count)
    if not det_output():  # det prints nothing
        kept = "forever" if forever or count == -1 else f"{count} days after it ends"
        console().print(f"Logs of experiment {experiment_id} are kept {kept}", markup=False)


@experiment.command("delete-tb-files")
@EXPERIMENT_ID
def delete_tb_files(experiment_id: int) -> None:
    """Delete the TensorBoard files of the experiment's trials from its checkpoint storage
    (its checkpoints, metrics and logs stay)."""
    left = current_client().get_experiment(experiment_id).delete_tensorboard_files()
    for line in left:
        console(stderr=True).print(f"Not removed from storage: {line}", markup=False)
    if not det_output():  # det prints nothing
        console().print(f"Deleted the TensorBoard files of experiment {experiment_id}")
