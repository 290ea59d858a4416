"""The Trial class that runs a loaded model definition, simple ones included."""

from __future__ import annotations

from pedl import Trial
from pedl.model_def import ModelDefinition
from pedl.script._trial import ScriptTrial


def trial_class_of(definition: ModelDefinition) -> type[Trial] | None:
    """The definition's own Trial class, :class:`ScriptTrial` for a simple model definition
    (a script or a ``module:function`` entrypoint), or None where it defines neither.

    The loader (:mod:`pedl.model_def`) knows no framework; the callers that run a definition
    ask here which Trial runs it."""
    if definition.trial_class is not None:
        return definition.trial_class
    return ScriptTrial if definition.simple else None
