"""The experiment engine and the one vocabulary every side of PEDL shares.

The vocabulary (states of experiments, trials and checkpoints; metric kinds; trial outcomes
and errors; the legal state changes) imports neither FastAPI nor TensorFlow, so the master,
the client, the CLI, local mode and the harness all import it from here.
"""

from pedl.engine._outcomes import InvalidHP, TrialError, TrialOutcome, user_location
from pedl.engine._states import CheckpointState, ExperimentState, MetricKind, TrialState
from pedl.engine._transitions import (
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
    "InvalidHP",
    "MetricKind",
    "TrialError",
    "TrialOutcome",
    "TrialState",
    "check_experiment_transition",
    "check_trial_transition",
    "experiment_action_target",
    "user_location",
]
