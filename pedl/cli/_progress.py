"""A live progress bar of an experiment on the master: trials done / running / queued and the
best metric so far, and a line for each trial as it finishes (the only output while it runs
when the output is a pipe or a file, where rich draws the bar once, at the end)."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from rich.console import Console
from rich.progress import BarColumn, Progress, TaskID, TextColumn, TimeElapsedColumn

from pedl.cli._display import format_number
from pedl.client import TERMINAL_TRIAL_STATES, Experiment, Trial

RUNNING_STATES = frozenset({"RUNNING", "STOPPING_CANCELED", "STOPPING_KILLED"})


class ExperimentProgress:
    """Use as ``with ExperimentProgress(console) as bar: experiment.wait(on_poll=bar.update)``."""

    def __init__(self, console: Console) -> None:
        self._progress = Progress(
            TextColumn("[bold]experiment {task.fields[experiment_id]}"),
            TextColumn("{task.fields[state]}"),
            BarColumn(bar_width=24),
            TextColumn("{task.percentage:>3.0f}%"),
            TextColumn("{task.fields[trials]}"),
            TextColumn("{task.fields[best]}"),
            TimeElapsedColumn(),
            console=console,
        )
        self._task: TaskID | None = None
        self._finished: set[int] = set()

    def __enter__(self) -> ExperimentProgress:
        self._progress.start()
        return self

    def __exit__(self, *exc: object) -> None:
        self._progress.stop()

    def update(self, experiment: Experiment) -> None:
        """Refresh from an experiment just reloaded (fetches its trials)."""
        trials = experiment.list_trials()
        done = sum(t.state in TERMINAL_TRIAL_STATES for t in trials)
        total = max(planned_trials(experiment.config) or 0, len(trials))
        metric = experiment.searcher_metric or "metric"
        for trial in sorted(trials, key=lambda t: t.id):
            if trial.state in TERMINAL_TRIAL_STATES and trial.id not in self._finished:
                self._finished.add(trial.id)
                self._progress.console.print(
                    _finished_line(trial, metric, done, total), highlight=False
                )
        running = sum(t.state in RUNNING_STATES for t in trials)
        queued = len(trials) - done - running
        values = [t.best_validation for t in trials if t.best_validation is not None]
        best = "best -"
        if values and experiment.searcher_metric:
            value = min(values) if experiment.smaller_is_better else max(values)
            best = f"best {experiment.searcher_metric}={format_number(value)}"
        trials_text = f"trials: {done} done, {running} running, {queued} queued"
        completed = 100 if experiment.state == "COMPLETED" else round(experiment.progress * 100)
        if self._task is None:
            self._task = self._progress.add_task(
                "", total=100, experiment_id=experiment.id, state="", trials="", best=""
            )
        self._progress.update(
            self._task,
            completed=completed,
            state=experiment.state,
            trials=trials_text,
            best=best,
        )


def planned_trials(config: Mapping[str, Any]) -> int | None:
    """How many trials the experiment's search makes in all: ``max_trials`` (random, ASHA,
    ...), 1 for ``single``, the grid's points for ``grid``; None when unknown (a custom
    searcher)."""
    searcher = config.get("searcher") or {}
    if searcher.get("name") == "single":
        return 1
    if searcher.get("name") == "grid":
        from pedl.config import grid_size  # the config's models: only for a grid

        try:
            return grid_size(config.get("hyperparameters") or {})
        except ValueError:
            return None
    planned = searcher.get("max_trials")
    return planned if isinstance(planned, int) else None


def _finished_line(trial: Trial, metric: str, done: int, total: int) -> str:
    """``trial 3 COMPLETED: best val_loss=0.12 after 500 batches (4 of 10 trials done)``."""
    outcome = trial.outcome.value if trial.outcome is not None else None
    how = f" ({outcome})" if outcome is not None and outcome != trial.state.value else ""
    best = "-" if trial.best_validation is None else format_number(trial.best_validation)
    return (
        f"trial {trial.id} {trial.state.value}{how}: best {metric}={best} after "
        f"{trial.total_batches} batches ({done} of {total} trials done)"
    )
