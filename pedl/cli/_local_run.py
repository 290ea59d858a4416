"""A local run in this process: ``pedl experiment create --local`` and ``--test``, and
``pedl experiment resume``; each trial's progress bar and the summary table.

Only these commands import this module (and with it local mode, which loads the engine, the
database layer and, when a trial runs, TensorFlow); every other command stays light.
"""

from __future__ import annotations

import sys
from collections.abc import Mapping
from pathlib import Path
from typing import Any

import click
from rich.console import Console
from rich.markup import escape
from rich.progress import BarColumn, MofNCompleteColumn, Progress, TextColumn, TimeElapsedColumn
from rich.table import Table

from pedl.cli._display import format_number, hparams_text, metrics_text, print_warnings
from pedl.config import ConfigError, config_warnings
from pedl.local import (
    ExperimentSummary,
    LocalExperiment,
    LocalTrial,
    NotARunDirectoryError,
    RunLog,
    smoke_test,
)
from pedl.model_def import ModelDefError
from pedl.vocabulary import ExperimentState, TrialOutcome, state_with_outcome


def create_local(
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
        print_warnings(out, config_warnings(exp.config))
        _run_local(out, exp, log)


def resume_local(out: Console, directory: Path) -> None:
    """Continue the interrupted local run in ``directory`` from its latest checkpoints."""
    with RunLog() as log:
        try:
            exp = LocalExperiment(directory)
        except NotARunDirectoryError as e:
            raise click.ClickException(str(e)) from e
        log.open(exp.directory)
        out.print(f"Resuming local experiment in [bold]{exp.directory}[/bold]")
        _run_local(out, exp, log)


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


def run_smoke_test(
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


class RichTrialDisplay:
    """Shows each running trial as a live progress bar with its latest metrics."""

    def __init__(self, console: Console) -> None:
        self._console = console
        self._progress = Progress(
            TextColumn("[bold]trial {task.fields[trial_id]}"),
            BarColumn(),
            MofNCompleteColumn(),
            TextColumn("batches"),
            TimeElapsedColumn(),
            TextColumn("{task.fields[metrics]}"),
            console=console,
            transient=False,
        )
        self._tasks: dict[int, Any] = {}
        self._metrics: dict[int, dict[str, float]] = {}

    def __enter__(self) -> RichTrialDisplay:
        self._progress.start()
        return self

    def __exit__(self, *exc: object) -> None:
        self._progress.stop()

    def trial_started(self, trial: LocalTrial, target_batches: int | None) -> None:
        if trial.id in self._tasks:
            self._progress.update(self._tasks[trial.id], total=target_batches)
            return
        self._metrics[trial.id] = {}
        self._tasks[trial.id] = self._progress.add_task(
            "", total=target_batches, trial_id=trial.id, metrics=hparams_text(trial.hparams)
        )

    def trial_progress(self, trial_id: int, batches: int, metrics: Mapping[str, float]) -> None:
        task = self._tasks.get(trial_id)
        if task is None:
            return
        self._metrics[trial_id].update(metrics)
        shown = metrics_text(self._metrics[trial_id])
        self._progress.update(task, completed=batches, metrics=shown)

    def trial_finished(self, trial: LocalTrial) -> None:
        task = self._tasks.get(trial.id)
        if task is not None and trial.state == "COMPLETED":
            total = self._progress.tasks[task].total
            if total is not None:
                self._progress.update(task, completed=total)


def summary_table(summary: ExperimentSummary) -> Table:
    best = summary.best_trial
    table = Table(title=f"Experiment {summary.directory} — {summary.state}")
    table.add_column("trial", justify="right")
    table.add_column("state")
    table.add_column("hyperparameters")
    table.add_column(f"best {summary.metric}", justify="right")
    table.add_column("checkpoint")
    for t in summary.trials:
        mark = " *" if best is not None and t.trial_id == best.trial_id else ""
        table.add_row(
            f"{t.trial_id}{mark}",
            state_with_outcome(t.state, t.outcome),
            hparams_text(t.hparams),
            format_number(t.best_metric),
            t.best_checkpoint_location or "-",
        )
    return table
