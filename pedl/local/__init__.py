"""Local mode: run an experiment in this process, without a master."""

from pedl.local._run_log import RunLog
from pedl.local._runner import (
    ExperimentSummary,
    LocalExperiment,
    LocalTrial,
    NotARunDirectoryError,
    TrialDisplay,
    TrialSummary,
)
from pedl.local._smoke import SmokeStep, smoke_test

__all__ = [
    "ExperimentSummary",
    "LocalExperiment",
    "LocalTrial",
    "NotARunDirectoryError",
    "RunLog",
    "SmokeStep",
    "TrialDisplay",
    "TrialSummary",
    "smoke_test",
]
