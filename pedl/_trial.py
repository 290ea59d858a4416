"""The framework-neutral base of every user-written Trial class."""

from __future__ import annotations

from typing import Any, ClassVar, Protocol

from pedl.vocabulary import TrialOutcome


class TrialController(Protocol):
    """Drives one framework's Trial through a :class:`pedl.core.Context`.

    ``from_definition`` receives the loaded model definition (the user's Trial class and,
    for the PEDL 0.x form, the module's ``make_data_loaders``) and the core context; ``run``
    trains until the searcher closes the trial, a preemption, or the model stops itself.
    """

    progressed: bool
    """True once a training batch completed in this run: an error before that (import,
    ``__init__``, ``build_model``, data loaders, the first batch) would recur on a restart."""

    def run(self) -> TrialOutcome:
        """Train; return COMPLETED, PREEMPTED or STOPPED_EARLY (or raise)."""
        ...


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
