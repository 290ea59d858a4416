"""Terminal output of local mode: a progress bar per trial, a summary table."""

from __future__ import annotations

import json
from collections.abc import Mapping
from typing import Any

from rich.console import Console
from rich.progress import BarColumn, MofNCompleteColumn, Progress, TextColumn, TimeElapsedColumn
from rich.table import Table

from pedl.config import flatten_hparams
from pedl.local import ExperimentSummary, TrialRecord


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

    def trial_started(self, trial: TrialRecord, target_batches: int | None) -> None:
        if trial.id in self._tasks:
            self._progress.update(self._tasks[trial.id], total=target_batches)
            return
        self._metrics[trial.id] = {}
        self._tasks[trial.id] = self._progress.add_task(
            "", total=target_batches, trial_id=trial.id, metrics=_hparams_text(trial.hparams)
        )

    def trial_progress(self, trial_id: int, batches: int, metrics: Mapping[str, float]) -> None:
        task = self._tasks.get(trial_id)
        if task is None:
            return
        self._metrics[trial_id].update(metrics)
        shown = " ".join(f"{k}={v:.4g}" for k, v in sorted(self._metrics[trial_id].items()))
        self._progress.update(task, completed=batches, metrics=shown)

    def trial_finished(self, trial: TrialRecord) -> None:
        task = self._tasks.get(trial.id)
        if task is not None and trial.state == "COMPLETED":
            total = self._progress.tasks[task].total
            if total is not None:
                self._progress.update(task, completed=total)


def _hparams_text(hparams: Mapping[str, Any]) -> str:
    return " ".join(f"{k}={v}" for k, v in flatten_hparams(hparams).items())


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
            t.state,
            json.dumps(flatten_hparams(t.hparams), sort_keys=True),
            "-" if t.best_metric is None else f"{t.best_metric:.4f}",
            str(t.best_checkpoint or "-"),
        )
    return table
