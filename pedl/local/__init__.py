"""Local mode: run an experiment in this process, without a master."""

from pedl.local._runner import (
    ExperimentSummary,
    LocalExperiment,
    TrialDisplay,
    TrialSummary,
)
from pedl.local._smoke import SmokeStep, smoke_test
from pedl.local._store import CheckpointRecord, LocalStore, MetricRow, TrialRecord

__all__ = [
    "CheckpointRecord",
    "ExperimentSummary",
    "LocalExperiment",
    "LocalStore",
    "MetricRow",
    "SmokeStep",
    "TrialDisplay",
    "TrialRecord",
    "TrialSummary",
    "smoke_test",
]
