"""``pedl experiment ...``."""

from __future__ import annotations

import shutil
import sys
import tempfile
import warnings
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any

import click
from rich.console import Console
from rich.markup import escape

from pedl.cli._aliases import AliasGroup
from pedl.cli._context import console, current_client, json_option, print_json
from pedl.cli._display import RichTrialDisplay, format_number, summary_table
from pedl.cli._failures import print_failures
from pedl.cli._progress import ExperimentProgress
from pedl.cli._tables import (
    checkpoints_table,
    experiment_table,
    experiments_table,
    trials_table,
)
from pedl.client import Client, Experiment, merge_template
from pedl.config import ConfigError, ConfigWarning, config_warnings
from pedl.config._overrides import overridden_document
from pedl.engine import ExperimentState, TrialOutcome
from pedl.local import (
    ExperimentSummary,
    LocalExperiment,
    NotARunDirectoryError,
    RunLog,
    smoke_test,
)
from pedl.model_def import ModelDefError


@click.group("experiment", cls=AliasGroup)
def experiment() -> None:
    """Create and manage experiments."""


@experiment.command("create")
@click.argument("config_file", type=click.Path(exists=True, dir_okay=False, path_type=Path))
@click.argument(
    "model_dir", type=click.Path(exists=True, path_type=Path), required=False, default=None
)
@click.option("--local", is_flag=True, help="Run the experiment in this process, without a master.")
@click.option(
    "--test",
    "test_mode",
    is_flag=True,
    help="Only check the model definition here: a short train chunk, a validation, a "
    "checkpoint, a restore.",
)
@click.option(
    "-t",
    "--test-mode",
    "master_test",
    is_flag=True,
    help="Submit a short test experiment to the master (one trial, a few batches, no "
    "restarts) and follow it to its end, as det's --test-mode does.",
)
@click.option(
    "--template",
    default=None,
    metavar="NAME",
    help="Merge this template (stored on the master) under the config (master mode).",
)
@click.option(
    "--follow-first-trial",
    is_flag=True,
    help="Print the first trial's logs until the experiment ends (master mode).",
)
@click.option(
    "-i",
    "--include",
    "includes",
    multiple=True,
    type=click.Path(exists=True, path_type=Path),
    metavar="PATH",
    help="Also package this file or directory with the model definition (repeatable).",
)
@click.option(
    "--config",
    "overrides",
    multiple=True,
    metavar="KEY=VALUE",
    help="Override a config field, e.g. --config searcher.max_trials=4 (repeatable).",
)
@click.option(
    "--output-dir",
    type=click.Path(file_okay=False, path_type=Path),
    default=Path("pedl-local"),
    show_default=True,
    help="Local mode: where experiment directories are made (exp-1, exp-2, ...).",
)
@click.option("--paused", is_flag=True, help="Submit the experiment PAUSED (master mode).")
@click.option(
    "-f",
    "--follow",
    is_flag=True,
    help="Show its progress until it ends, then the best trial and checkpoint (master mode).",
)
def create(
    config_file: Path,
    model_dir: Path | None,
    local: bool,
    test_mode: bool,
    master_test: bool,
    template: str | None,
    follow_first_trial: bool,
    includes: tuple[Path, ...],
    overrides: tuple[str, ...],
    output_dir: Path,
    paused: bool,
    follow: bool,
) -> None:
    """Create an experiment from CONFIG_FILE and the model definition in MODEL_DIR (default:
    the directory CONFIG_FILE is in).

    Without --local (or --test) the experiment is submitted to the master.
    """
    out = console()
    model_dir = model_dir if model_dir is not None else config_file.resolve().parent
    with _with_includes(model_dir, includes) as packaged:
        if test_mode:
            _run_smoke_test(out, config_file, packaged, overrides)
            return
        if not local:
            if paused and (master_test or follow_first_trial or follow):
                raise click.UsageError(
                    "--paused cannot be combined with --test-mode, --follow or "
                    "--follow-first-trial (a paused experiment does not run)"
                )
            _create_on_master(
                out,
                config_file,
                packaged,
                overrides,
                paused,
                follow,
                master_test=master_test,
                template=template,
                follow_first_trial=follow_first_trial,
            )
            return
        if paused or follow or master_test or follow_first_trial or template:
            raise click.UsageError(
                "--paused and --follow apply to experiments on a master (and so do "
                "--test-mode, --template and --follow-first-trial)"
            )
        _create_local(out, config_file, packaged, overrides, output_dir)


@contextmanager
def _with_includes(model_dir: Path, includes: tuple[Path, ...]) -> Iterator[Path]:
    """``model_dir``, or (with ``-i`` paths) a temporary copy of it with each included file
    or directory beside its contents under its own name."""
    if not includes:
        yield model_dir
        return
    with tempfile.TemporaryDirectory(prefix="pedl-model-def-") as tmp:
        packaged = Path(tmp) / model_dir.resolve().name
        shutil.copytree(model_dir, packaged, symlinks=True)
        for path in includes:
            target = packaged / path.resolve().name
            if target.exists():
                raise click.UsageError(f"--include {path}: {target.name} is in MODEL_DIR already")
            if path.is_dir():
                shutil.copytree(path, target, symlinks=True)
            else:
                shutil.copy2(path, target)
        yield packaged


def _create_local(
    out: Console,
    config_file: Path,
    model_dir: Path,
    overrides: tuple[str, ...],
    output_dir: Path,
) -> None:
    with RunLog() as log:
        try:
            exp = LocalExperiment.create(config_file, model_dir, output_dir, overrides=overrides)
        except (ConfigError, ModelDefError) as e:
            raise click.ClickException(str(e)) from e
        log.open(exp.directory)
        out.print(f"Created local experiment in [bold]{exp.directory}[/bold]")
        _print_warnings(out, config_warnings(exp.config))
        _run_local(out, exp, log)


@experiment.command("resume")
@click.argument("directory", type=click.Path(exists=True, file_okay=False, path_type=Path))
def resume(directory: Path) -> None:
    """Continue an interrupted local experiment from its latest checkpoints."""
    out = console()
    with RunLog() as log:
        try:
            exp = LocalExperiment(directory)
        except NotARunDirectoryError as e:
            raise click.ClickException(str(e)) from e
        log.open(exp.directory)
        out.print(f"Resuming local experiment in [bold]{exp.directory}[/bold]")
        _run_local(out, exp, log)


def _print_warnings(console: Console, messages: list[str]) -> None:
    for message in messages:
        console.print(f"warning: {message}", style="yellow", markup=False, highlight=False)


def _run_local(console: Console, exp: LocalExperiment, log: RunLog) -> None:
    with RichTrialDisplay(console) as display:
        exp.display = display
        summary = exp.run()
    exp.close()
    _print_summary(console, summary)
    if summary.state == ExperimentState.ERROR:
        console.print(
            f"[red]The experiment failed:[/red] {escape(str(summary.error))}", highlight=False
        )
    if log.path is not None:
        console.print(
            f"Log (tracebacks, TensorFlow's start-up, migrations): {escape(str(log.path))}"
        )
    if summary.state == ExperimentState.PAUSED:
        console.print(
            f"Interrupted. Continue with: [bold]pedl experiment resume {summary.directory}[/bold]"
        )
        sys.exit(130)
    if summary.state == ExperimentState.ERROR:
        sys.exit(1)


def _print_summary(console: Console, summary: ExperimentSummary) -> None:
    """The table of trials, each failed trial's error (once: not when the experiment's error,
    printed last, names it already) and the best trial."""
    console.print(summary_table(summary))
    said_later = summary.error if summary.state == ExperimentState.ERROR else None
    for t in summary.trials:
        if (
            said_later
            and t.error is not None
            and f"trial {t.trial_id}: " + t.error.summary() in (said_later)
        ):
            continue
        if t.error is not None and t.outcome in (TrialOutcome.ERRORED, TrialOutcome.INVALID_HP):
            what = "failed" if t.outcome == TrialOutcome.ERRORED else "rejected its hyperparameters"
            console.print(
                f"[red]Trial {t.trial_id} {what}:[/red] {t.error.summary()}", highlight=False
            )
    best = summary.best_trial
    if best is not None:
        console.print(
            f"Best trial: {best.trial_id} ({summary.metric} = {format_number(best.best_metric)}), "
            f"checkpoint: {best.best_checkpoint_location or '-'}"
        )


def _run_smoke_test(
    console: Console, config_file: Path, model_dir: Path, overrides: tuple[str, ...]
) -> None:
    # TensorFlow's start-up lines and the log's notes are not shown (no log file: -v shows them).
    with RunLog():
        steps = smoke_test(config_file, model_dir, overrides)
    for step in steps:
        mark = "[green]ok[/green]  " if step.ok else "[red]FAILED[/red]"
        console.print(f"{mark} {step.name}" + (f": {escape(step.detail)}" if step.detail else ""))
    if all(step.ok for step in steps):
        console.print("The model definition works with PEDL.")
    else:
        sys.exit(1)


TEST_MODE_BATCHES = 10
"""How many batches the one trial of a ``--test-mode`` experiment trains."""


def test_mode_config(document: dict[str, Any]) -> dict[str, Any]:
    """The config of ``det``'s ``--test-mode`` experiment: one trial (``single`` searcher,
    same metric) of :data:`TEST_MODE_BATCHES` batches, no restarts, named as a test."""
    searcher = document.get("searcher") or {}
    test = dict(document)
    test["searcher"] = {
        key: searcher[key] for key in ("metric", "smaller_is_better") if key in searcher
    }
    test["searcher"].update(name="single", max_length={"batches": TEST_MODE_BATCHES})
    test["max_restarts"] = 0
    test["name"] = f"{document.get('name') or 'experiment'} (test mode)"
    return test


def _create_on_master(
    console: Console,
    config_file: Path,
    model_dir: Path,
    overrides: tuple[str, ...],
    paused: bool,
    follow: bool,
    *,
    master_test: bool = False,
    template: str | None = None,
    follow_first_trial: bool = False,
) -> None:
    client = current_client()
    config: Any = config_file
    if master_test:
        try:
            document = overridden_document(config_file.read_text(encoding="utf-8"), overrides)
        except ConfigError as e:
            raise click.ClickException(str(e)) from e
        if template is not None:
            document = merge_template(document, client.get_template(template))
        config, overrides, template = test_mode_config(document), (), None
    try:
        # Printed below from the master's answer, not a second time by Python's warnings.
        with warnings.catch_warnings(action="ignore", category=ConfigWarning):
            exp = client.create_experiment(
                config, model_dir, overrides=overrides, activate=not paused, template=template
            )
    except ModelDefError as e:
        raise click.ClickException(str(e)) from e
    _print_warnings(console, exp.to_dict().get("warnings", []))
    what = "test experiment" if master_test else "experiment"
    console.print(f"Created {what} {exp.id} ({exp.state}) on {client.master}")
    if follow_first_trial:
        trial = exp.await_first_trial(interval=0.5)
        for line in trial.logs(follow=True, interval=1.0):
            click.echo(line.message)
    if follow or master_test or follow_first_trial:
        _follow(console, exp, interval=2.0)


def _follow(console: Console, exp: Experiment, *, interval: float) -> None:
    """Show the progress bar until the experiment ends, then the best trial; exit 1 unless
    it COMPLETED."""
    with ExperimentProgress(console) as bar:
        state = exp.wait(interval=interval, on_poll=bar.update)
    console.print(f"Experiment {exp.id} ended: {state}")
    print_failures(console, exp, exp.list_trials())
    best = exp.top_checkpoint()
    if best is not None:
        console.print(
            f"Best trial: {best.trial_id} ({exp.searcher_metric} = "
            f"{format_number(best.metric(exp.searcher_metric or ''))}), checkpoint: {best.uuid}"
        )
    if state != "COMPLETED":
        sys.exit(1)


EXPERIMENT_ID = click.argument("experiment_id", type=click.IntRange(min=1))


@experiment.command("list")
@click.option(
    "--state", "states", multiple=True, help="Only experiments in this state (repeatable)."
)
@click.option("-a", "--all", "show_all", is_flag=True, help="Archived experiments too.")
@json_option
def list_experiments(states: tuple[str, ...], show_all: bool, as_json: bool) -> None:
    """List the master's experiments, newest first (not the archived ones unless --all)."""
    experiments = current_client().list_experiments(
        states=[s.upper() for s in states], archived=None if show_all else False
    )
    if as_json:
        print_json([e.to_dict() for e in experiments])
    else:
        console().print(experiments_table(experiments))


@experiment.command("describe")
@EXPERIMENT_ID
@json_option
def describe(experiment_id: int, as_json: bool) -> None:
    """Show an experiment and its trials (and the warm workers that ran its trials and
    exited by themselves)."""
    client = current_client()
    exp = client.get_experiment(experiment_id)
    trials = exp.list_trials()
    exits = _worker_exits(client, exp.id)
    if as_json:
        print_json(
            {**exp.to_dict(), "trials": [t.to_dict() for t in trials], "worker_exits": exits}
        )
        return
    out = console()
    out.print(experiment_table(exp))
    out.print(trials_table(trials, exp.searcher_metric))
    print_failures(out, exp, trials)
    for gone in exits:
        out.print(
            f"[yellow]The warm worker process {gone['pid']}, which ran trial "
            f"{gone['trial_id']}, exited by itself while idle ({escape(str(gone['exit']))}) at "
            f"{escape(str(gone['at']))}.[/yellow]"
        )


def _worker_exits(client: Client, experiment_id: int) -> list[dict[str, Any]]:
    """The master's warm workers that ran trials of the experiment and exited by themselves
    while idle (``GET /cluster``; none from a master that does not list them)."""
    cluster = client.session.get("/cluster")
    exits = cluster.get("worker_exits", []) if isinstance(cluster, dict) else []
    return [gone for gone in exits if gone.get("experiment_id") == experiment_id]


def _action_command(action: str, help_text: str) -> None:
    @experiment.command(action, help=help_text)
    @EXPERIMENT_ID
    def command(experiment_id: int) -> None:
        exp = current_client().get_experiment(experiment_id)
        getattr(exp, action)()
        console().print(f"Experiment {exp.id}: {exp.state}")


_action_command("pause", "Pause an active experiment.")
_action_command("activate", "Resume a paused experiment.")
_action_command("cancel", "Stop an experiment gracefully (trials checkpoint first).")
_action_command("kill", "Stop an experiment at once.")


@experiment.command("wait")
@EXPERIMENT_ID
@click.option(
    "--interval",
    type=click.FloatRange(min=0.01),
    default=2.0,
    show_default=True,
    help="Seconds between polls.",
)
def wait(experiment_id: int, interval: float) -> None:
    """Show an experiment's progress until it ends; exit 1 unless it COMPLETED."""
    exp = current_client().get_experiment(experiment_id)
    _follow(console(), exp, interval=interval)


@experiment.command("list-trials")
@EXPERIMENT_ID
@json_option
def list_trials(experiment_id: int, as_json: bool) -> None:
    """List an experiment's trials."""
    exp = current_client().get_experiment(experiment_id)
    trials = exp.list_trials()
    if as_json:
        print_json([t.to_dict() for t in trials])
    else:
        console().print(trials_table(trials, exp.searcher_metric))


@experiment.command("list-checkpoints")
@EXPERIMENT_ID
@click.option(
    "--best",
    type=click.IntRange(min=1),
    default=None,
    help="Only the N best by the searcher metric, best first.",
)
@json_option
def list_checkpoints(experiment_id: int, best: int | None, as_json: bool) -> None:
    """List an experiment's checkpoints (oldest first, or the best N)."""
    exp = current_client().get_experiment(experiment_id)
    checkpoints = exp.list_checkpoints() if best is None else exp.top_n_checkpoints(best)
    if as_json:
        print_json([c.to_dict() for c in checkpoints])
    else:
        console().print(checkpoints_table(checkpoints, f"Checkpoints of experiment {exp.id}"))


@experiment.command("download")
@EXPERIMENT_ID
@click.option(
    "--top-n",
    type=click.IntRange(min=1),
    default=1,
    show_default=True,
    help="How many of the best checkpoints to download.",
)
@click.option(
    "-o",
    "--output-dir",
    type=click.Path(file_okay=False, path_type=Path),
    default=Path("checkpoints"),
    show_default=True,
    help="Each checkpoint goes to OUTPUT_DIR/<uuid>.",
)
def download(experiment_id: int, top_n: int, output_dir: Path) -> None:
    """Download the best checkpoints of an experiment (by its searcher metric)."""
    exp = current_client().get_experiment(experiment_id)
    best = exp.top_n_checkpoints(top_n)
    if not best:
        raise click.ClickException(
            f"experiment {exp.id} has no completed checkpoint with a validation "
            f"{exp.searcher_metric}"
        )
    out = console()
    for checkpoint in best:
        path = checkpoint.download(output_dir / checkpoint.uuid)
        out.print(f"Checkpoint {checkpoint.uuid} (trial {checkpoint.trial_id}) -> {path}")
