"""The Trial class of a simple model definition (a script or function that calls fit())."""

from __future__ import annotations

from typing import Any, ClassVar

from pedl._trial import Trial
from pedl.script._controller import ScriptController


class ScriptTrial(Trial):
    """Stands for a simple model definition: the model-definition loader gives it as the
    Trial class of an entrypoint script (``train.py``, ``python3 train.py --flags``) or
    function (``module:function``). Users do not subclass it."""

    framework: ClassVar[str] = "script"
    trial_controller_class: ClassVar[Any] = ScriptController
