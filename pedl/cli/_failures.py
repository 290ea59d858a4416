"""Why an experiment or trial failed, in the words the CLI prints wherever a user looks
(``describe``, ``wait``, ``create --follow``, ``trial describe``)."""

from __future__ import annotations

from collections.abc import Iterable

from rich.console import Console
from rich.markup import escape

from pedl.client import Experiment, Trial
from pedl.vocabulary import ExperimentState, TrialOutcome


def trial_failure_lines(trials: Iterable[Trial]) -> list[str]:
    """One line per trial that errored or rejected its hyperparameters: its outcome, the
    error's type and message, the user-code location, and whether it was restarted."""
    lines = []
    for trial in trials:
        if trial.error is None or trial.outcome not in (
            TrialOutcome.ERRORED,
            TrialOutcome.INVALID_HP,
        ):
            continue
        what = "invalid hyperparameters" if trial.outcome == TrialOutcome.INVALID_HP else "error"
        when = " before training progressed, not restarted" if trial.error.before_progress else ""
        restarts = f" after {trial.restarts} restart(s)" if trial.restarts else ""
        if trial.error.recurred:
            restarts += (
                f", the same error at the same batch ({trial.error.batches}) again: not restarted"
            )
        lines.append(
            f"trial {trial.id} ({trial.state}, {what}{when}{restarts}): {trial.error.summary()}"
        )
    return lines


def print_failures(console: Console, experiment: Experiment, trials: Iterable[Trial]) -> None:
    """Print why the experiment failed (if it did) and each failed trial's error, each error
    once: the experiment's reason leaves out the trials' errors that their own lines give."""
    trials = list(trials)
    lines = trial_failure_lines(trials)
    if experiment.state == ExperimentState.ERROR:
        reason = experiment.error or "no reason was recorded"
        for trial in trials:
            if trial.error is not None and any(x.startswith(f"trial {trial.id} (") for x in lines):
                reason = reason.replace(f"; trial {trial.id}: {trial.error.summary()}", "")
        console.print(f"[red]Experiment {experiment.id} failed:[/red] {escape(reason)}")
    for line in lines:
        console.print(f"[red]{escape(line)}[/red]")
