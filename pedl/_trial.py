"""The framework-neutral base of every user-written Trial class."""

from __future__ import annotations

import enum
from typing import Any, ClassVar, Protocol


class TrialOutcome(enum.Enum):
    """How a trial process's run ended (short of an exception)."""

    COMPLETED = "completed"  # the searcher has no more work for the trial
    PREEMPTED = "preempted"  # asked to stop (pause, kill, shutdown): checkpointed, to be resumed
    STOPPED_BY_USER = "stopped_by_user"  # the model asked to stop training (model.stop_training)


class TrialController(Protocol):
    """Drives one framework's Trial through a :class:`pedl.core.Context`.

    ``from_definition`` receives the loaded model definition (the user's Trial class and,
    for the PEDL 0.x form, the module's ``make_data_loaders``) and the core context; ``run``
    trains until the searcher closes the trial, a preemption, or the model stops itself.
    """

    def run(self) -> TrialOutcome: ...


class Trial:
    """Base class of all trials.

    A framework package (``pedl.keras``, ``pedl.tensorflow``) subclasses it; users subclass
    the framework's class. ``framework`` names the controller that drives the trial, so the
    model-definition loader can find a Trial class without importing any framework.
    """

    framework: ClassVar[str] = ""
    trial_controller_class: ClassVar[Any] = None

    def __init__(self, context: Any) -> None:
        self.context = context
