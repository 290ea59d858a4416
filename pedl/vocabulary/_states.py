"""The lifecycle states of experiments, trials and checkpoints, and the kinds of metrics."""

from __future__ import annotations

from enum import StrEnum


class ExperimentState(StrEnum):
    """Where an experiment is in its life.

    ``ACTIVE`` and ``PAUSED`` are the live states a user toggles between. ``STOPPING_*`` mean
    that a cancel or kill was requested and the scheduler is winding the trials down; it then
    moves the experiment to ``CANCELED``. ``CANCELED``, ``COMPLETED`` and ``ERROR`` are terminal.
    """

    ACTIVE = "ACTIVE"
    PAUSED = "PAUSED"
    STOPPING_CANCELED = "STOPPING_CANCELED"
    STOPPING_KILLED = "STOPPING_KILLED"
    CANCELED = "CANCELED"
    COMPLETED = "COMPLETED"
    ERROR = "ERROR"

    @property
    def is_terminal(self) -> bool:
        """True for the states nothing ever leaves."""
        return self in _TERMINAL_EXPERIMENT_STATES

    @property
    def is_stopping(self) -> bool:
        """True while a cancel or kill is being carried out."""
        return self in (ExperimentState.STOPPING_CANCELED, ExperimentState.STOPPING_KILLED)


class TrialState(StrEnum):
    """Where a trial is in its life.

    The experiment's states plus the scheduling states: a trial is created ``ACTIVE`` (wants
    to run), becomes ``QUEUED`` when it asks the scheduler for slots and ``RUNNING`` when its
    process is started. ``ACTIVE``, ``QUEUED``, ``RUNNING`` and ``PAUSED`` are the live states.
    """

    ACTIVE = "ACTIVE"
    QUEUED = "QUEUED"
    RUNNING = "RUNNING"
    PAUSED = "PAUSED"
    STOPPING_CANCELED = "STOPPING_CANCELED"
    STOPPING_KILLED = "STOPPING_KILLED"
    CANCELED = "CANCELED"
    COMPLETED = "COMPLETED"
    ERROR = "ERROR"

    @property
    def is_terminal(self) -> bool:
        """True for the states nothing ever leaves."""
        return self in _TERMINAL_TRIAL_STATES

    @property
    def is_live(self) -> bool:
        """True for the states from which a trial may still be (re)scheduled."""
        return self in _LIVE_TRIAL_STATES


class CheckpointState(StrEnum):
    """``ACTIVE``: being written; ``COMPLETED``: usable; ``ERROR``: failed; ``DELETED``: gone;
    ``PARTIALLY_DELETED``: some of its files were removed (``remove_files``, ``det checkpoint rm
    --glob``): what is left can be downloaded, but no trial resumes or warm-starts from it."""

    ACTIVE = "ACTIVE"
    COMPLETED = "COMPLETED"
    ERROR = "ERROR"
    DELETED = "DELETED"
    PARTIALLY_DELETED = "PARTIALLY_DELETED"


class MetricKind(StrEnum):
    """The two series a trial reports."""

    TRAINING = "training"
    VALIDATION = "validation"


_TERMINAL_EXPERIMENT_STATES = frozenset(
    {ExperimentState.CANCELED, ExperimentState.COMPLETED, ExperimentState.ERROR}
)
_TERMINAL_TRIAL_STATES = frozenset({TrialState.CANCELED, TrialState.COMPLETED, TrialState.ERROR})
_LIVE_TRIAL_STATES = frozenset(
    {TrialState.ACTIVE, TrialState.QUEUED, TrialState.RUNNING, TrialState.PAUSED}
)
