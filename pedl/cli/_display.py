"""Terminal output of local mode: a progress bar per trial, a summary table."""

from __future__ import annotations

import json
import math
from collections.abc import Mapping
from typing import Any

from rich.console import Console
from rich.progress import BarColumn, MofNCompleteColumn, Progress, TextColumn, TimeElapsedColumn
from rich.table import Table

from pedl.config import flatten_hparams
from pedl.engine import state_with_outcome
from pedl.local import ExperimentSummary, LocalTrial

SIGNIFICANT_DIGITS = 4
NUMBER_WIDTH = 11
"""The longest :func:`format_number` of a float: ``-1.235e+308``."""


def format_number(value: Any) -> str:
    """A hyperparameter or metric value for a table: floats with 4 significant digits
    (``0.0001234``, ``0.1235``, ``1e-05``, ``1.235e+05``), ints and bools as themselves,
    ``None`` as ``-``, anything else as its JSON (strings bare)."""
    if value is None:
        return "-"
    if isinstance(value, bool | int):
        return str(value)
    if isinstance(value, float):
        if math.isnan(value) or math.isinf(value):
            return str(value)
        return f"{value:.{SIGNIFICANT_DIGITS}g}"
    if isinstance(value, str):
        return value
    try:
        return json.dumps(value, sort_keys=True, default=str)
    except (TypeError, ValueError):
        return str(value)


def hparams_text(hparams: Mapping[str, Any]) -> str:
    """Hyperparameters as ``name=value`` pairs, nested groups dotted, values by
    :func:`format_number`, sorted by name."""
    flat = flatten_hparams(hparams)
    return " ".join(f"{k}={format_number(flat[k])}" for k in sorted(flat)) or "-"


def metrics_text(metrics: Mapping[str, Any] | None) -> str:
    """Metrics as ``name=value`` pairs sorted by name, values by :func:`format_number`."""
    if not metrics:
        return "-"
    return " ".join(f"{k}={format_number(v)}" for k, v in sorted(metrics.items()))


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
