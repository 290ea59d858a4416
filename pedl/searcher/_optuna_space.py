"""PEDL's hyperparameter space as Optuna distributions, and Optuna's draws as PEDL
hyperparameters. Imports Optuna: it is imported only when a Bayesian searcher is built
(:mod:`pedl.searcher._bayes`)."""

from __future__ import annotations

import copy
import math
from collections.abc import Mapping
from typing import Any

from optuna.distributions import (
    BaseDistribution,
    CategoricalDistribution,
    FloatDistribution,
    IntDistribution,
)
from pydantic import TypeAdapter, ValidationError

from pedl.config import (
    CategoricalHyperparameter,
    ConstHyperparameter,
    DoubleHyperparameter,
    HyperparameterSpace,
    IntHyperparameter,
    LogHyperparameter,
    canonical_order,
)
from pedl.searcher._errors import SearcherError

_SPACE: TypeAdapter[dict[str, Any]] = TypeAdapter(HyperparameterSpace)


class OptunaSpace:
    """A hyperparameter space (the ``hyperparameters`` section, raw or validated) mapped
    onto Optuna's distributions, one per hyperparameter that varies.

    Names: the hyperparameter's path with dots (``optimizer.lr`` for ``lr`` in the group
    ``optimizer``), in ``pedl.config.canonical_order`` at every level, depth first (the
    order ``sample_hparams`` draws in): Optuna's samplers draw in the order of the
    distributions, so the space's key order (which a store may change) changes nothing.

    - ``int`` -> ``IntDistribution(minval, maxval)``;
    - ``double`` -> ``FloatDistribution(minval, maxval)``;
    - ``log`` -> ``FloatDistribution(minval, maxval)`` over the EXPONENT; the value is
      ``base ** exponent``, computed as ``sample_hparams`` computes it. (Optuna's
      ``log=True`` over ``[base**minval, base**maxval]`` is the same distribution for its
      samplers, which work on the logarithm, but fails for ``base < 1`` and for bounds
      that underflow to 0.)
    - ``categorical`` -> ``CategoricalDistribution`` over the value's INDEX in ``vals``, so
      that any value (a list, a mapping) comes back as itself, and values Optuna would
      confuse (``1``, ``1.0`` and ``True``; repeated values) stay distinct. Optuna's
      samplers treat categories as unordered labels, so indices change nothing else.
    - ``const`` -> no distribution; its value (a copy) is put back in every trial.
    - nested groups -> their leaves, by dotted name, rebuilt into nested dicts.
    """

    def __init__(self, space: Mapping[str, Any]) -> None:
        try:
            self._space = _SPACE.validate_python(dict(space))
        except ValidationError as e:
            raise SearcherError(f"Invalid hyperparameter space: {e}") from e
        self._distributions: dict[str, BaseDistribution] = {}
        for name, spec in _leaves(self._space, ()):
            distribution: BaseDistribution
            try:
                if isinstance(spec, IntHyperparameter):
                    distribution = IntDistribution(spec.minval, spec.maxval)
                elif isinstance(spec, DoubleHyperparameter | LogHyperparameter):
                    if not (math.isfinite(spec.minval) and math.isfinite(spec.maxval)):
                        raise ValueError("minval and maxval must be finite")
                    distribution = FloatDistribution(spec.minval, spec.maxval)
                elif isinstance(spec, CategoricalHyperparameter):
                    distribution = CategoricalDistribution(tuple(range(len(spec.vals))))
                else:
                    continue
            except ValueError as e:
                raise SearcherError(f"Hyperparameter {name!r}: {e}") from e
            if name in self._distributions:
                raise SearcherError(
                    f"Two hyperparameters are both named {name!r} once nested groups are "
                    "flattened with dots; rename one to use a Bayesian searcher."
                )
            self._distributions[name] = distribution

    @property
    def distributions(self) -> dict[str, BaseDistribution]:
        """Optuna's distributions, by dotted name, in canonical order (a copy)."""
        return dict(self._distributions)

    def hparams(self, params: Mapping[str, Any]) -> dict[str, Any]:
        """The hyperparameters of a trial whose Optuna ``params`` are these, shaped as
        ``sample_hparams`` shapes them (nested groups as nested dicts, same key order)."""
        missing = set(self._distributions) - set(params)
        if missing:
            raise SearcherError(f"Optuna gave no value for {sorted(missing)}.")
        return _build(self._space, (), params)


def _leaves(space: Mapping[str, Any], route: tuple[str, ...]) -> list[tuple[str, Any]]:
    found: list[tuple[str, Any]] = []
    for key in canonical_order(space):
        spec = space[key]
        path = (*route, str(key))
        if isinstance(spec, Mapping):
            found.extend(_leaves(spec, path))
        else:
            found.append((".".join(path), spec))
    return found


def _build(space: Mapping[str, Any], route: tuple[str, ...], params: Mapping[str, Any]) -> Any:
    out: dict[Any, Any] = {}
    for key, spec in space.items():
        path = (*route, str(key))
        name = ".".join(path)
        if isinstance(spec, Mapping):
            out[key] = _build(spec, path, params)
        elif isinstance(spec, ConstHyperparameter):
            out[key] = copy.deepcopy(spec.val)
        elif isinstance(spec, IntHyperparameter):
            out[key] = int(params[name])
        elif isinstance(spec, DoubleHyperparameter):
            out[key] = float(params[name])
        elif isinstance(spec, LogHyperparameter):
            out[key] = spec.base ** float(params[name])
        elif isinstance(spec, CategoricalHyperparameter):
            out[key] = copy.deepcopy(spec.vals[int(params[name])])
    return out
