"""Why a trial stopped before the searcher closed it."""

from __future__ import annotations

import enum


class ExitedReason(enum.StrEnum):
    """The reason passed to :meth:`SearchMethod.on_trial_exited_early`."""

    ERRORED = "ERRORED"
    """The trial's code raised, or its process died."""
    USER_CANCELED = "USER_CANCELED"
    """A user killed or cancelled the trial."""
    INVALID_HP = "INVALID_HP"
    """The trial's code rejected its hyperparameters (``pedl.InvalidHP``)."""
    USER_REQUESTED_STOP = "USER_REQUESTED_STOP"
    """The trial's code stopped training itself (``model.stop_training``, a stop request)."""
