"""The experiment engine: a pure driver (events in, actions out) that local mode and the
master both run, the actions it asks for, the contract of the store its shells keep, and
:func:`checkpoints_past_retention`, its retention rule, and :func:`delete_checkpoints`, the one
executor of its deletions.

The vocabulary it speaks (states, metric kinds, outcomes, transitions) lives below it, in
:mod:`pedl.vocabulary`.
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
from pedl.engine._deletion import delete_checkpoints
from pedl.engine._driver import ExperimentDriver, OperationAnswer, TrialRecord
from pedl.engine._retention import RetainedTrial, checkpoints_past_retention
from pedl.engine._store import ExperimentStore, StoredExperiment

__all__ = [
    "Action",
    "AppendSearcherEvent",
    "CreateTrial",
    "DeleteCheckpoints",
    "ExperimentDriver",
    "ExperimentStore",
    "KillTrial",
    "LogTrial",
    "OperationAnswer",
    "RetainedTrial",
    "SetExperimentState",
    "SetProgress",
    "SetTrialState",
    "StoredExperiment",
    "TrialRecord",
    "checkpoints_past_retention",
    "delete_checkpoints",
    "with_default_storage",
]
