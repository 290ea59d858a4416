"""PBT's explore step: a copy's hyperparameters, "near" its parent's (Determined's ``pbt``
``explore_function``).

For each hyperparameter, in the order values are drawn (:func:`pedl.config.canonical_order`
at every level of nested groups, depth first), one draw from the rng decides:

- with probability ``resample_probability`` the value is drawn afresh from its range, as a
  random search draws it;
- else a second draw picks, with even odds, to decrease or increase it by the factor
  ``1 - perturb_factor`` or ``1 + perturb_factor``: ``int`` values are multiplied and
  rounded away from the parent's value (floor when decreasing, ceil when increasing),
  ``double`` and ``log`` values multiplied; all are clamped to the range (a ``log``
  range's bounds are ``base ** minval`` and ``base ** maxval``). ``categorical`` and
  ``const`` values are kept (Determined perturbs only numbers).

The rng is the searcher's own, so the explored values depend only on its state.
"""

from __future__ import annotations

import copy
import math
import random
from collections.abc import Mapping
from typing import Any

from pydantic import TypeAdapter

from pedl.config import (
    DoubleHyperparameter,
    HyperparameterSpace,
    IntHyperparameter,
    LogHyperparameter,
    canonical_order,
    sample_hparams,
)

_SPACE: TypeAdapter[dict[str, Any]] = TypeAdapter(HyperparameterSpace)


def validated_space(space: Mapping[str, Any]) -> dict[str, Any]:
    """The ``hyperparameters`` section as typed hyperparameters (raw YAML-style mappings
    are validated)."""
    return _SPACE.validate_python(dict(space))


def explore_hparams(
    space: Mapping[str, Any],
    parent: Mapping[str, Any],
    rng: random.Random,
    *,
    resample_probability: float,
    perturb_factor: float,
) -> dict[str, Any]:
    """A copy's hyperparameters explored from ``parent``'s (see the module's rules);
    ``space`` is the validated space (:func:`validated_space`)."""
    drawn: dict[str, Any] = {}
    for name in canonical_order(space):
        spec = space[name]
        old = parent.get(name)
        if isinstance(spec, Mapping):
            drawn[name] = explore_hparams(
                spec,
                old if isinstance(old, Mapping) else {},
                rng,
                resample_probability=resample_probability,
                perturb_factor=perturb_factor,
            )
        elif rng.random() < resample_probability:
            drawn[name] = sample_hparams({name: spec}, rng)[name]
        else:
            decrease = rng.random() < 0.5
            drawn[name] = _perturbed(spec, old, decrease, perturb_factor)
    return {name: drawn[name] for name in space}


def _perturbed(spec: Any, old: Any, decrease: bool, factor: float) -> Any:
    multiplier = 1 - factor if decrease else 1 + factor
    if isinstance(spec, IntHyperparameter) and _is_number(old):
        scaled = old * multiplier
        value = math.floor(scaled) if decrease else math.ceil(scaled)
        return int(min(max(value, spec.minval), spec.maxval))
    if isinstance(spec, DoubleHyperparameter) and _is_number(old):
        return float(min(max(old * multiplier, spec.minval), spec.maxval))
    if isinstance(spec, LogHyperparameter) and _is_number(old):
        low, high = spec.base**spec.minval, spec.base**spec.maxval
        return float(min(max(old * multiplier, low), high))
    return copy.deepcopy(old)


def _is_number(value: Any) -> bool:
    return isinstance(value, int | float) and not isinstance(value, bool) and math.isfinite(value)
