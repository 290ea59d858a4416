"""A trial's outcome beside its state: the rule (every state and outcome), and the CLI's
tables and the SDK's field that show it."""

from __future__ import annotations

from typing import Any

from hypothesis import given
from hypothesis import strategies as st
from rich.console import Console

from pedl.cli._tables import trial_table, trials_table
from pedl.client import Session, Trial
from pedl.vocabulary import (
    OUTCOME_WORDS,
    TrialOutcome,
    TrialState,
    outcome_note,
    state_with_outcome,
)


@given(
    st.sampled_from(TrialState),
    st.none() | st.sampled_from(TrialOutcome),
    st.sampled_from([0, 1, 500]),
)
def test_the_note_adds_only_what_the_state_hides(
    state: TrialState, outcome: TrialOutcome | None, batches: int
) -> None:
    note = outcome_note(state, outcome, batches)
    shown = state_with_outcome(state, outcome, batches)
    if note is None:
        assert shown == state.value
    else:
        assert shown == f"{state.value} ({note})"
    if state.is_terminal:
        said = outcome is None or (state, outcome) in {
            (TrialState.COMPLETED, TrialOutcome.COMPLETED),
            (TrialState.ERROR, TrialOutcome.ERRORED),
        }
        assert note == (None if said or outcome is None else OUTCOME_WORDS[outcome])
    elif outcome == TrialOutcome.ERRORED:
        assert note == "errored, to be restarted"
    elif state == TrialState.ACTIVE and batches > 0:
        # Its process exited after its rung; no process runs it until the searcher decides.
        assert note == "waiting for the searcher"
    else:
        assert note is None


def _trial(session: Session, **fields: Any) -> Trial:
    data = {
        "id": 7,
        "experiment_id": 1,
        "hparams": {"lr": 0.1},
        "seed": 3,
        "state": "COMPLETED",
        "restarts": 0,
        "total_batches": 0,
        "created_at": "2026-11-26T12:00:00Z",
        **fields,
    }
    return Trial(session, data)


def _text(table: Any) -> str:
    console = Console(width=200, record=True)
    console.print(table)
    return console.export_text()


def test_an_invalid_hp_trial_does_not_read_as_a_plain_completed_one() -> None:
    with Session("http://127.0.0.1:9", token="unused") as session:
        rejected = _trial(session, outcome="INVALID_HP")
        pruned = _trial(session, id=8, outcome="STOPPED_BY_SEARCHER", total_batches=50)
        killed = _trial(session, id=9, state="CANCELED", outcome="KILLED")
        plain = _trial(session, id=10, outcome="COMPLETED", total_batches=200)
    assert rejected.outcome_note == "invalid hyperparameters"
    assert pruned.outcome_note == "stopped by the searcher"
    assert plain.outcome_note is None
    table = _text(trials_table([rejected, pruned, killed, plain], "val_loss"))
    assert "COMPLETED (invalid hyperparameters)" in table
    assert "COMPLETED (stopped by the searcher)" in table
    assert "CANCELED (killed)" in table
    assert table.count("COMPLETED (") == 2  # the plain one: its state alone
    assert "COMPLETED (invalid hyperparameters)" in _text(trial_table(rejected))


def test_a_trial_waiting_at_a_rung_reads_as_waiting_not_running() -> None:
    """An adaptive search's trial whose process exited after its rung, before the searcher
    decides: ACTIVE with batches, no process. The CLI and the SDK say it waits."""
    with Session("http://127.0.0.1:9", token="unused") as session:
        waiting = _trial(session, state="ACTIVE", total_batches=40)
        fresh = _trial(session, id=8, state="ACTIVE")  # created, not yet scheduled
        running = _trial(session, id=9, state="RUNNING", total_batches=40)
    assert waiting.outcome_note == "waiting for the searcher"
    assert fresh.outcome_note is None and running.outcome_note is None
    table = _text(trials_table([waiting, fresh, running], "val_loss"))
    assert "ACTIVE (waiting for the searcher)" in table
    assert table.count("waiting") == 1
    assert "ACTIVE (waiting for the searcher)" in _text(trial_table(waiting))
