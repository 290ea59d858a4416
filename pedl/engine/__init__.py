"""The experiment engine and the one vocabulary every side of PEDL shares.

The vocabulary (states of experiments, trials and checkpoints; metric kinds; trial outcomes
and errors; the legal state changes) imports neither FastAPI nor TensorFlow, so the master,
the client, the CLI, local mode and the harness all import it from here.
"""

from pedl.engine._actions import (
    Action,
    AppendSearcherEvent,
    CreateTrial,
    DeleteCheckpoints,
    KillTrial,
    LogTrial,
    SetExperimentState,
    SetProgress,
    SetTrialState,
)
from pedl.engine._defaults import with_default_storage
from pedl.engine._driver import ExperimentDriver, OperationAnswer, TrialRecord
from pedl.engine._outcome_note import (
    OUTCOME_WORDS,
    outcome_note,
    state_with_outcome,
    waiting_for_searcher,
)
from pedl.engine._outcomes import (
    MAX_ERROR_MESSAGE,
    MAX_TRACEBACK,
    InvalidHP,
    TrialError,
    TrialOutcome,
    searcher_metric_of,
    user_location,
)
from pedl.engine._states import CheckpointState, ExperimentState, MetricKind, TrialState
from pedl.engine._store import ExperimentStore, StoredExperiment
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
    "MAX_ERROR_MESSAGE",
    "MAX_TRACEBACK",
    "OUTCOME_WORDS",
    "TRIAL_TRANSITIONS",
    "Action",
    "AppendSearcherEvent",
    "CheckpointState",
    "CreateTrial",
    "DeleteCheckpoints",
    "ExperimentAction",
    "ExperimentDriver",
    "ExperimentState",
    "ExperimentStore",
    "IllegalTransitionError",
    "InvalidHP",
    "KillTrial",
    "LogTrial",
    "MetricKind",
    "OperationAnswer",
    "SetExperimentState",
    "SetProgress",
    "SetTrialState",
    "StoredExperiment",
    "TrialError",
    "TrialOutcome",
    "TrialRecord",
    "TrialState",
    "check_experiment_transition",
    "check_trial_transition",
    "experiment_action_target",
    "outcome_note",
    "searcher_metric_of",
    "state_with_outcome",
    "user_location",
    "waiting_for_searcher",
    "with_default_storage",
]
