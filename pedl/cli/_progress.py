"""A live progress bar of an experiment on the master: trials done / running / queued and the
best metric so far."""

from __future__ import annotations

from rich.console import Console
from rich.progress import BarColumn, Progress, TaskID, TextColumn, TimeElapsedColumn

from pedl.cli._display import format_number
from pedl.client import TERMINAL_TRIAL_STATES, Experiment

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

    def __enter__(self) -> ExperimentProgress:
        self._progress.start()
        return self

    def __exit__(self, *exc: object) -> None:
        self._progress.stop()

    def update(self, experiment: Experiment) -> None:
        """Refresh from an experiment just reloaded (fetches its trials)."""
        trials = experiment.list_trials()
        done = sum(t.state in TERMINAL_TRIAL_STATES for t in trials)
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
