"""A KerasTuner search space as PEDL hyperparameters, and a PEDL trial's values back as
KerasTuner's :class:`keras_tuner.HyperParameters`.

The space is the one KerasTuner's own tuner reads: the tuner's oracle holds every
hyperparameter that ``build_model(hp)`` registers, those of conditional scopes included (a
tuner builds the hypermodel once per scope until each was active once,
``BaseTuner._populate_initial_space``).
"""

from __future__ import annotations

import math
from collections.abc import Mapping
from typing import Any

import keras_tuner

GRID_POINTS_OF_A_RANGE = 10
"""The points a continuous range has in a grid: KerasTuner's ``GridSearch`` takes ten values
of a ``Float`` without ``step``."""


class SpaceError(ValueError):
    """A hyperparameter of the KerasTuner space has no PEDL counterpart; the message names it
    and says what to write instead."""


def pedl_hyperparameters(
    space: keras_tuner.HyperParameters, *, grid: bool = False
) -> dict[str, dict[str, Any]]:
    """The PEDL ``hyperparameters`` section of ``space`` (every hyperparameter, also those only
    active in a conditional scope; a trial's inactive ones are unused, as in KerasTuner).

    ``Fixed`` is ``const``; ``Boolean`` and ``Choice`` are ``categorical``; an ``Int`` of
    step 1 is ``int``; a ``Float`` without ``step`` is ``double`` (linear) or ``log`` (base
    10, its bounds' exponents: the same log-uniform draw); an ``Int`` or ``Float`` with a
    ``step`` (linear, log or reverse_log) is ``categorical`` over KerasTuner's own values of
    it, drawn uniformly as KerasTuner draws them. With ``grid``, ranges get ``count``: every
    integer of an ``int``, :data:`GRID_POINTS_OF_A_RANGE` points of a ``double`` or ``log``.

    Raises :class:`SpaceError` for a draw PEDL has no type for: ``sampling="reverse_log"``
    and an ``Int`` with ``sampling="log"``, each without ``step``.
    """
    return {hp.name: _one(hp, grid=grid) for hp in space.space}


def _one(hp: Any, *, grid: bool) -> dict[str, Any]:
    if isinstance(hp, keras_tuner.engine.hyperparameters.Fixed):
        return {"type": "const", "val": hp.value}
    if isinstance(hp, keras_tuner.engine.hyperparameters.Boolean):
        return {"type": "categorical", "vals": [True, False]}
    if isinstance(hp, keras_tuner.engine.hyperparameters.Choice):
        return {"type": "categorical", "vals": list(hp.values)}
    is_int = isinstance(hp, keras_tuner.engine.hyperparameters.Int)
    if not is_int and not isinstance(hp, keras_tuner.engine.hyperparameters.Float):
        kind = type(hp).__name__
        raise SpaceError(f"hyperparameter {hp.name!r}: {kind} is not a KerasTuner type")
    if hp.step is not None and not (is_int and hp.sampling == "linear" and hp.step == 1):
        return {"type": "categorical", "vals": [_number(v, is_int) for v in hp.values]}
    kind = "Int" if is_int else "Float"
    if hp.sampling == "reverse_log":
        raise SpaceError(
            f"hyperparameter {hp.name!r}: {kind}(sampling='reverse_log') without step has no "
            "PEDL counterpart (PEDL draws uniformly or log-uniformly); give it a step= (its "
            "values become a categorical hyperparameter) or use sampling='log'"
        )
    if is_int and hp.sampling == "log":
        raise SpaceError(
            f"hyperparameter {hp.name!r}: Int(sampling='log') without step has no PEDL "
            "counterpart (PEDL's log hyperparameters are floats); give it a step= (its values "
            "become a categorical hyperparameter)"
        )
    if is_int:
        section: dict[str, Any] = {"type": "int", "minval": hp.min_value, "maxval": hp.max_value}
        if grid:
            section["count"] = hp.max_value - hp.min_value + 1
        return section
    if hp.sampling == "log":
        section = {
            "type": "log",
            "base": 10.0,
            "minval": math.log10(hp.min_value),
            "maxval": math.log10(hp.max_value),
        }
    else:
        section = {"type": "double", "minval": float(hp.min_value), "maxval": float(hp.max_value)}
    if grid:
        section["count"] = GRID_POINTS_OF_A_RANGE
    return section


def _number(value: Any, is_int: bool) -> int | float:
    return int(value) if is_int else float(value)


def keras_tuner_values(
    space: keras_tuner.HyperParameters, hparams: Mapping[str, Any]
) -> keras_tuner.HyperParameters:
    """A copy of ``space`` holding a PEDL trial's ``hparams`` as its values: those of the
    hyperparameters active with them (KerasTuner's own trials hold no value for a
    hyperparameter whose conditional scope is off). Names that are not in the space (PEDL's
    ``global_batch_size``, others of the config) are left out."""
    hp = space.copy()
    names = {h.name: h for h in space.space}
    for name, value in hparams.items():
        if name in names:
            hp.values[name] = value
    for name, definition in names.items():
        if not hp.is_active(definition):
            hp.values.pop(name, None)
    return hp
