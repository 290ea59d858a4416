"""Lifecycle states and the rules for moving between them (no I/O, no database)."""

from pedl.master.states._states import CheckpointState, ExperimentState, MetricKind, TrialState
from pedl.master.states._transitions import (
    EXPERIMENT_TRANSITIONS,
    TRIAL_TRANSITIONS,
    ExperimentAction,
    IllegalTransitionError,
    check_experiment_transition,
    check_trial_transition,
    experiment_action_target,
)

__all__ = [
    "EXPERIMENT_TRANSITIONS",
    "TRIAL_TRANSITIONS",
    "CheckpointState",
    "ExperimentAction",
    "ExperimentState",
    "IllegalTransitionError",
    "MetricKind",
    "TrialState",
    "check_experiment_transition",
    "check_trial_transition",
    "experiment_action_target",
]
