"""A trial's outcome beside its state: the rule (every state and outcome), and the CLI's
tables and the SDK's field that show it."""

from __future__ import annotations

from typing import Any

from hypothesis import given
from hypothesis import strategies as st
from rich.console import Console

from pedl.cli._tables import trial_table, trials_table
from pedl.client import Session, Trial
from pedl.engine import OUTCOME_WORDS, TrialOutcome, TrialState, outcome_note, state_with_outcome


@given(st.sampled_from(TrialState), st.none() | st.sampled_from(TrialOutcome))
def test_the_note_adds_only_what_the_state_hides(
    state: TrialState, outcome: TrialOutcome | None
) -> None:
    note = outcome_note(state, outcome)
    shown = state_with_outcome(state, outcome)
    if note is None:
        assert shown == state.value
    else:
        assert shown == f"{state.value} ({note})"
    if outcome is None or (state, outcome) in {
        (TrialState.COMPLETED, TrialOutcome.COMPLETED),
        (TrialState.ERROR, TrialOutcome.ERRORED),
    }:
        assert note is None
    elif state.is_terminal:
        assert note == OUTCOME_WORDS[outcome]
    else:
        assert note == ("errored, to be restarted" if outcome == TrialOutcome.ERRORED else None)


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
