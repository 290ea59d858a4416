"""The lifecycle rules: user actions and the master's own transitions."""

from __future__ import annotations

import pytest

from pedl.vocabulary import (
    EXPERIMENT_TRANSITIONS,
    TRIAL_TRANSITIONS,
    ExperimentAction,
    ExperimentState,
    IllegalTransitionError,
    TrialState,
    check_experiment_transition,
    check_trial_transition,
    experiment_action_target,
)

E = ExperimentState
A = ExperimentAction

ALLOWED_ACTIONS = {
    (E.ACTIVE, A.PAUSE): E.PAUSED,
    (E.PAUSED, A.PAUSE): E.PAUSED,
    (E.PAUSED, A.ACTIVATE): E.ACTIVE,
    (E.ACTIVE, A.ACTIVATE): E.ACTIVE,
    (E.ACTIVE, A.CANCEL): E.STOPPING_CANCELED,
    (E.PAUSED, A.CANCEL): E.STOPPING_CANCELED,
    (E.STOPPING_CANCELED, A.CANCEL): E.STOPPING_CANCELED,
    (E.STOPPING_KILLED, A.CANCEL): E.STOPPING_KILLED,
    (E.ACTIVE, A.KILL): E.STOPPING_KILLED,
    (E.PAUSED, A.KILL): E.STOPPING_KILLED,
    (E.STOPPING_CANCELED, A.KILL): E.STOPPING_KILLED,
    (E.STOPPING_KILLED, A.KILL): E.STOPPING_KILLED,
}


@pytest.mark.parametrize("state", list(E))
@pytest.mark.parametrize("action", list(A))
def test_every_action_in_every_state(state: ExperimentState, action: ExperimentAction) -> None:
    expected = ALLOWED_ACTIONS.get((state, action))
    if expected is not None:
        assert experiment_action_target(state, action) == expected
        return
    with pytest.raises(IllegalTransitionError) as info:
        experiment_action_target(state, action, experiment_id=12)
    message = str(info.value)
    assert f"cannot {action.value} experiment 12" in message
    assert state.value in message
    assert info.value.current == state.value and info.value.requested == action.value


def test_terminal_states_have_no_way_out() -> None:
    for state in E:
        assert state.is_terminal == (EXPERIMENT_TRANSITIONS[state] == frozenset())
    for trial_state in TrialState:
        assert trial_state.is_terminal == (TRIAL_TRANSITIONS[trial_state] == frozenset())
    with pytest.raises(IllegalTransitionError, match="from COMPLETED to ACTIVE"):
        check_experiment_transition(E.COMPLETED, E.ACTIVE)


def test_master_transitions() -> None:
    check_experiment_transition(E.STOPPING_CANCELED, E.CANCELED)
    check_experiment_transition(E.STOPPING_KILLED, E.CANCELED)
    check_experiment_transition(E.ACTIVE, E.COMPLETED)
    check_experiment_transition(E.ERROR, E.ERROR)  # staying put is a no-op
    with pytest.raises(IllegalTransitionError):
        check_experiment_transition(E.STOPPING_KILLED, E.ACTIVE)
    with pytest.raises(IllegalTransitionError):
        check_experiment_transition(E.PAUSED, E.COMPLETED)


def test_trial_transitions() -> None:
    T = TrialState
    for live in (T.ACTIVE, T.QUEUED, T.RUNNING, T.PAUSED):
        assert live.is_live
        check_trial_transition(live, T.STOPPING_KILLED)
        check_trial_transition(live, T.ERROR)
    check_trial_transition(T.RUNNING, T.QUEUED)  # preempted or restarted
    check_trial_transition(T.STOPPING_CANCELED, T.COMPLETED)
    with pytest.raises(IllegalTransitionError, match="trial 3 cannot go from CANCELED"):
        check_trial_transition(T.CANCELED, T.RUNNING, trial_id=3)
    with pytest.raises(IllegalTransitionError):
        check_trial_transition(T.STOPPING_KILLED, T.RUNNING)
