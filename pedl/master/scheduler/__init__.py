"""Which queued trials get slots now: pure placement logic, no I/O."""

from pedl.master.scheduler._scheduler import (
    DEFAULT_PRIORITY,
    ExperimentLimits,
    Placement,
    RunningTrial,
    TrialRequest,
    never_fits,
    schedule,
)

__all__ = [
    "DEFAULT_PRIORITY",
    "ExperimentLimits",
    "Placement",
    "RunningTrial",
    "TrialRequest",
    "never_fits",
    "schedule",
]
