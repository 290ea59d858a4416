"""The framework-neutral base of every user-written Trial class."""

from __future__ import annotations

import abc
from typing import Any, ClassVar


class Trial(abc.ABC):
    """Base class of all trials.

    A framework package (``pedl.keras``, ``pedl.tensorflow``) subclasses it; users subclass
    the framework's class. ``framework`` names the controller that drives the trial, so the
    model-definition loader can find a Trial class without importing any framework.
    """

    framework: ClassVar[str] = ""

    def __init__(self, context: Any) -> None:
        self.context = context
