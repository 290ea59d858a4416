"""What to show beside a trial's state: its outcome in words, where the state alone hides it
(a COMPLETED trial that rejected its hyperparameters, was stopped by the searcher or stopped
itself; a CANCELED one that was killed; a live one restarting after an error), and that an
ACTIVE trial which has trained waits for the searcher (no process runs it)."""

from __future__ import annotations

from pedl.vocabulary._outcomes import TrialOutcome
from pedl.vocabulary._states import TrialState

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


WAITING_NOTE = "waiting for the searcher"
"""The note of an ACTIVE trial that has trained: its process exited after the work the
searcher gave it (an adaptive search's rung), and the searcher has not yet decided whether to
give it more (it runs again) or to stop it. No process runs it."""


def outcome_note(
    state: TrialState, outcome: TrialOutcome | None, total_batches: int = 0
) -> str | None:
    """The outcome to show beside ``state`` in words, or ``None`` where the state says it
    all: an ended trial's outcome unless it is the one its state implies; a live trial's
    latest run when it errored (it runs again from its latest checkpoint); for an ACTIVE
    trial that has trained (``total_batches``) otherwise, :data:`WAITING_NOTE`.

    ACTIVE is the live state in which no process runs the trial and it waits for nothing
    else: one the scheduler can run becomes QUEUED or RUNNING at the orchestrator's next
    pass, a paused experiment's trials are PAUSED. So an ACTIVE trial that has trained waits
    for the searcher (the only exception lasts one pass: a promoted trial before it is
    queued)."""
    if state.is_terminal:
        if outcome is None:
            return None
        return None if (state, outcome) in _SAID_BY_THE_STATE else OUTCOME_WORDS[outcome]
    if outcome == TrialOutcome.ERRORED:
        return "errored, to be restarted"
    if state == TrialState.ACTIVE and total_batches > 0:
        return WAITING_NOTE
    return None


def waiting_for_searcher(
    state: TrialState, outcome: TrialOutcome | None, total_batches: int
) -> bool:
    """Whether the trial waits for the searcher with no process (:data:`WAITING_NOTE`)."""
    return outcome_note(state, outcome, total_batches) == WAITING_NOTE


def state_with_outcome(
    state: TrialState, outcome: TrialOutcome | None, total_batches: int = 0
) -> str:
    """``COMPLETED (invalid hyperparameters)``, ``ACTIVE (waiting for the searcher)``; the
    state alone when :func:`outcome_note` has nothing to add."""
    note = outcome_note(state, outcome, total_batches)
    return state.value if note is None else f"{state.value} ({note})"
