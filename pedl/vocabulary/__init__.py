"""The one vocabulary every side of PEDL shares: the states of experiments, trials and
checkpoints, metric kinds, trial outcomes and errors, the legal state changes, the words
shown beside a state, and how a non-finite metric value travels.

It imports nothing but the standard library, so the harness (:mod:`pedl.core`), the engine,
the master, local mode, the SDK and the CLI all speak it without loading one another.
"""

from pedl.vocabulary._metric_values import (
    NON_FINITE_NAMES,
    decode_metric_value,
    encode_metric_value,
    encode_metric_values,
)
from pedl.vocabulary._outcome_note import (
    OUTCOME_WORDS,
    outcome_note,
    state_with_outcome,
    waiting_for_searcher,
)
from pedl.vocabulary._outcomes import (
    MAX_ERROR_MESSAGE,
    MAX_TRACEBACK,
    InvalidHP,
    TrialError,
    TrialOutcome,
    searcher_metric_of,
    user_location,
)
from pedl.vocabulary._states import CheckpointState, ExperimentState, MetricKind, TrialState
from pedl.vocabulary._transitions import (
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
    "MAX_ERROR_MESSAGE",
    "MAX_TRACEBACK",
    "NON_FINITE_NAMES",
    "OUTCOME_WORDS",
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
    "decode_metric_value",
    "encode_metric_value",
    "encode_metric_values",
    "experiment_action_target",
    "outcome_note",
    "searcher_metric_of",
    "state_with_outcome",
    "user_location",
    "waiting_for_searcher",
]
