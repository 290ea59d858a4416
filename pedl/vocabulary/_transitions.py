"""The one place that says which state changes are legal.

Two kinds of change exist. *Actions* are what a user asks for through the API (pause,
activate, cancel, kill); :func:`experiment_action_target` maps an action and the current state
to the new state or refuses it. *Transitions* are what the master itself does (the scheduler
moving a stopping experiment to ``CANCELED``, a trial to ``RUNNING``);
:func:`check_experiment_transition` and :func:`check_trial_transition` refuse the illegal ones.
Staying in the same state is always legal (a no-op), so repeated requests are idempotent.
"""

from __future__ import annotations

from collections.abc import Mapping
from enum import StrEnum

from pedl.vocabulary._states import ExperimentState, TrialState


class ExperimentAction(StrEnum):
    """What a user may ask an experiment to do."""

    PAUSE = "pause"
    ACTIVATE = "activate"
    CANCEL = "cancel"
    KILL = "kill"


class IllegalTransitionError(Exception):
    """A state change that the rules forbid; ``str(err)`` says which and why, for the user."""

    def __init__(self, message: str, *, current: str, requested: str) -> None:
        super().__init__(message)
        self.message = message
        self.current = current
        self.requested = requested


_E = ExperimentState
_T = TrialState

EXPERIMENT_TRANSITIONS: Mapping[ExperimentState, frozenset[ExperimentState]] = {
    _E.ACTIVE: frozenset(
        {_E.PAUSED, _E.STOPPING_CANCELED, _E.STOPPING_KILLED, _E.COMPLETED, _E.ERROR}
    ),
    _E.PAUSED: frozenset({_E.ACTIVE, _E.STOPPING_CANCELED, _E.STOPPING_KILLED, _E.ERROR}),
    _E.STOPPING_CANCELED: frozenset({_E.STOPPING_KILLED, _E.CANCELED, _E.ERROR}),
    _E.STOPPING_KILLED: frozenset({_E.CANCELED, _E.ERROR}),
    _E.CANCELED: frozenset(),
    _E.COMPLETED: frozenset(),
    _E.ERROR: frozenset(),
}
"""For each experiment state, the other states it may move to."""

_TRIAL_LIVE = frozenset({_T.ACTIVE, _T.QUEUED, _T.RUNNING, _T.PAUSED})
_TRIAL_END = frozenset({_T.CANCELED, _T.COMPLETED, _T.ERROR})

TRIAL_TRANSITIONS: Mapping[TrialState, frozenset[TrialState]] = {
    **{
        state: (_TRIAL_LIVE - {state}) | {_T.STOPPING_CANCELED, _T.STOPPING_KILLED} | _TRIAL_END
        for state in _TRIAL_LIVE
    },
    _T.STOPPING_CANCELED: frozenset({_T.STOPPING_KILLED}) | _TRIAL_END,
    _T.STOPPING_KILLED: frozenset({_T.CANCELED, _T.ERROR}),
    _T.CANCELED: frozenset(),
    _T.COMPLETED: frozenset(),
    _T.ERROR: frozenset(),
}
"""For each trial state, the other states it may move to."""

# action -> (the state it leads to, the states it is accepted from). An accepted state that
# differs from the target and is not a legal transition source is kept as is (cancel while
# killing stays killing: the stronger request wins).
_ACTIONS: Mapping[ExperimentAction, tuple[ExperimentState, frozenset[ExperimentState]]] = {
    ExperimentAction.PAUSE: (_E.PAUSED, frozenset({_E.ACTIVE, _E.PAUSED})),
    ExperimentAction.ACTIVATE: (_E.ACTIVE, frozenset({_E.PAUSED, _E.ACTIVE})),
    ExperimentAction.CANCEL: (
        _E.STOPPING_CANCELED,
        frozenset({_E.ACTIVE, _E.PAUSED, _E.STOPPING_CANCELED, _E.STOPPING_KILLED}),
    ),
    ExperimentAction.KILL: (
        _E.STOPPING_KILLED,
        frozenset({_E.ACTIVE, _E.PAUSED, _E.STOPPING_CANCELED, _E.STOPPING_KILLED}),
    ),
}


def experiment_action_target(
    current: ExperimentState, action: ExperimentAction, *, experiment_id: int | None = None
) -> ExperimentState:
    """Return the state ``action`` moves an experiment in state ``current`` to.

    The result equals ``current`` when the action is already in effect (pausing a paused
    experiment, cancelling one that is being killed). Raises :class:`IllegalTransitionError`
    with a message naming the experiment, its state and the action when the action is not
    allowed (anything on a terminal experiment; pause or activate while stopping).
    """
    target, accepted = _ACTIONS[action]
    who = "experiment" if experiment_id is None else f"experiment {experiment_id}"
    if current not in accepted:
        if current.is_terminal:
            reason = f"it has already ended ({current.value})"
        else:
            reason = f"it is {current.value}"
        raise IllegalTransitionError(
            f"cannot {action.value} {who}: {reason}",
            current=current.value,
            requested=action.value,
        )
    if current == target or target in EXPERIMENT_TRANSITIONS[current]:
        return target
    return current


def check_experiment_transition(
    current: ExperimentState, target: ExperimentState, *, experiment_id: int | None = None
) -> None:
    """Raise :class:`IllegalTransitionError` unless an experiment may go from ``current`` to
    ``target`` (staying put is always allowed)."""
    if current != target and target not in EXPERIMENT_TRANSITIONS[current]:
        who = "experiment" if experiment_id is None else f"experiment {experiment_id}"
        raise IllegalTransitionError(
            f"{who} cannot go from {current.value} to {target.value}",
            current=current.value,
            requested=target.value,
        )


def check_trial_transition(
    current: TrialState, target: TrialState, *, trial_id: int | None = None
) -> None:
    """Raise :class:`IllegalTransitionError` unless a trial may go from ``current`` to
    ``target`` (staying put is always allowed)."""
    if current != target and target not in TRIAL_TRANSITIONS[current]:
        who = "trial" if trial_id is None else f"trial {trial_id}"
        raise IllegalTransitionError(
            f"{who} cannot go from {current.value} to {target.value}",
            current=current.value,
            requested=target.value,
        )
