"""What to show beside a trial's state: its outcome in words, where the state alone hides it
(a COMPLETED trial that rejected its hyperparameters, was stopped by the searcher or stopped
itself; a CANCELED one that was killed; a live one restarting after an error)."""

from __future__ import annotations

from pedl.engine._outcomes import TrialOutcome
from pedl.engine._states import TrialState

OUTCOME_WORDS = {
    TrialOutcome.COMPLETED: "completed",
    TrialOutcome.STOPPED_EARLY: "stopped early",
    TrialOutcome.STOPPED_BY_SEARCHER: "stopped by the searcher",
    TrialOutcome.INVALID_HP: "invalid hyperparameters",
    TrialOutcome.ERRORED: "errored",
    TrialOutcome.KILLED: "killed",
    TrialOutcome.PREEMPTED: "preempted",
}
"""Each outcome in the words the CLI, the SDK and the web UI show."""

_SAID_BY_THE_STATE = {
    (TrialState.COMPLETED, TrialOutcome.COMPLETED),
    (TrialState.ERROR, TrialOutcome.ERRORED),
}


def outcome_note(state: TrialState, outcome: TrialOutcome | None) -> str | None:
    """The outcome to show beside ``state`` in words, or ``None`` where the state says it
    all: an ended trial's outcome unless it is the one its state implies; a live trial's
    latest run only when it errored (it runs again from its latest checkpoint)."""
    if outcome is None:
        return None
    if state.is_terminal:
        return None if (state, outcome) in _SAID_BY_THE_STATE else OUTCOME_WORDS[outcome]
    if outcome == TrialOutcome.ERRORED:
        return "errored, to be restarted"
    return None


def state_with_outcome(state: TrialState, outcome: TrialOutcome | None) -> str:
    """``COMPLETED (invalid hyperparameters)``; the state alone when :func:`outcome_note` has
    nothing to add."""
    note = outcome_note(state, outcome)
    return state.value if note is None else f"{state.value} ({note})"
