"""Drawing hyperparameter values: random samples, grids, and flattening of nested groups."""

from __future__ import annotations

import copy
import itertools
import math
import random
from collections.abc import Mapping
from typing import Any

from pydantic import TypeAdapter, ValidationError

from pedl.config._base import KNOWN_FIELDS_CONTEXT_KEY
from pedl.config._checks import missing_grid_counts
from pedl.config._hyperparameters import (
    CategoricalHyperparameter,
    ConstHyperparameter,
    DoubleHyperparameter,
    HyperparameterSpace,
    IntHyperparameter,
    LogHyperparameter,
)
from pedl.config._issues import ConfigError, ConfigIssue, PathElement, format_path
from pedl.config._translate import translate_errors

_SPACE: TypeAdapter[dict[str, Any]] = TypeAdapter(HyperparameterSpace)
_PREFIX: tuple[PathElement, ...] = ("hyperparameters",)


def _validated(space: Mapping[str, Any]) -> dict[str, Any]:
    """The space as typed hyperparameters; raw YAML-style mappings are validated first."""
    data = dict(space)
    known: dict[int, list[str]] = {}
    try:
        return _SPACE.validate_python(data, context={KNOWN_FIELDS_CONTEXT_KEY: known})
    except ValidationError as exc:
        problems = translate_errors(exc.errors(include_url=False), data, known)
        raise ConfigError(
            [ConfigIssue(format_path((*_PREFIX, *path)), message) for path, message in problems],
            "hyperparameters",
        ) from None


def canonical_order(space: Mapping[str, Any]) -> list[str]:
    """The names of one level of a hyperparameter space in the order values are drawn:
    sorted (as Python sorts strings: by code point). Applied at every level, depth first,
    this is the order of the hyperparameters' paths, so draws never depend on the mapping's
    key order (which a store may change: PostgreSQL's JSONB sorts keys by length first)."""
    return sorted(space)


def _in_space_order(values: Mapping[str, Any], space: Mapping[str, Any]) -> dict[str, Any]:
    """``values`` (drawn for ``space``, possibly nested) with the space's key order."""
    return {
        name: _in_space_order(values[name], space[name])
        if isinstance(space[name], Mapping) and isinstance(values[name], Mapping)
        else values[name]
        for name in space
        if name in values  # an empty group has no grid axis, so no value
    }


def _sample_space(space: Mapping[str, Any], rng: random.Random) -> dict[str, Any]:
    drawn = {name: _sample_one(space[name], rng) for name in canonical_order(space)}
    return {name: drawn[name] for name in space}


def _sample_one(spec: Any, rng: random.Random) -> Any:
    if isinstance(spec, ConstHyperparameter):
        return copy.deepcopy(spec.val)
    if isinstance(spec, IntHyperparameter):
        return rng.randint(spec.minval, spec.maxval)
    if isinstance(spec, DoubleHyperparameter):
        return rng.uniform(spec.minval, spec.maxval)
    if isinstance(spec, LogHyperparameter):
        return spec.base ** rng.uniform(spec.minval, spec.maxval)
    if isinstance(spec, CategoricalHyperparameter):
        return copy.deepcopy(spec.vals[rng.randrange(len(spec.vals))])
    return _sample_space(spec, rng)


def sample_hparams(space: Mapping[str, Any], rng: random.Random) -> dict[str, Any]:
    """One random draw from a hyperparameter space; nested groups come back as nested dicts.

    ``space`` is the ``hyperparameters`` section, raw (as in YAML) or validated. Values are
    drawn in :func:`canonical_order` at every level (depth first: the order of the
    hyperparameters' paths), so they depend only on the rng's state and the space's
    contents, never on its key order; the result has the space's key order. int: uniform
    over ``[minval, maxval]`` inclusive; double: uniform; log: ``base ** uniform(minval,
    maxval)``; categorical: a uniform choice; const: its value (a copy). Raises ConfigError
    for an invalid space.
    """
    return _sample_space(_validated(space), rng)


def _round_half_away(value: float) -> int:
    """Go's math.Round: halves round away from zero (Python's round() rounds to even)."""
    return math.floor(value + 0.5) if value >= 0 else -math.floor(-value + 0.5)


def _grid_values(spec: Any) -> list[Any]:
    if isinstance(spec, ConstHyperparameter):
        return [spec.val]
    if isinstance(spec, CategoricalHyperparameter):
        return list(spec.vals)
    count = spec.count
    lo, hi = spec.minval, spec.maxval
    if isinstance(spec, IntHyperparameter):
        count = min(count, hi - lo + 1)
        if count == 1:
            return [_round_half_away((lo + hi) / 2)]
        return [_round_half_away(lo + i * (hi - lo) / (count - 1)) for i in range(count)]
    if count == 1:
        points = [(lo + hi) / 2]
    else:
        points = [lo + i * (hi - lo) / (count - 1) for i in range(count)]
    if isinstance(spec, LogHyperparameter):
        return [spec.base**point for point in points]
    return points


def _grid_axes(
    space: Mapping[str, Any], route: tuple[str, ...]
) -> list[tuple[tuple[str, ...], list[Any]]]:
    axes: list[tuple[tuple[str, ...], list[Any]]] = []
    for name in canonical_order(space):
        spec = space[name]
        if isinstance(spec, Mapping):
            axes.extend(_grid_axes(spec, (*route, name)))
        else:
            axes.append(((*route, name), _grid_values(spec)))
    return axes


def _axis_size(spec: Any) -> int | None:
    if isinstance(spec, ConstHyperparameter):
        return 1
    if isinstance(spec, CategoricalHyperparameter):
        return len(spec.vals)
    if isinstance(spec, Mapping):
        return _space_size(spec)
    if spec.count is None:
        return None
    if isinstance(spec, IntHyperparameter):
        return int(min(spec.count, spec.maxval - spec.minval + 1))
    return int(spec.count)


def _space_size(space: Mapping[str, Any]) -> int | None:
    size = 1
    for spec in space.values():
        axis = _axis_size(spec)
        if axis is None:
            return None
        size *= axis
    return size


def grid_size(space: Mapping[str, Any]) -> int | None:
    """How many points ``grid_hparams(space)`` gives, computed without building them.

    ``None`` when an int/double/log hyperparameter has no ``count``. Raises ConfigError for
    an invalid space.
    """
    return _space_size(_validated(space))


def grid_axis_sizes(space: Mapping[str, Any]) -> list[tuple[str, int | None]]:
    """Each hyperparameter of the grid (dotted name, nested groups expanded, sorted) with its
    number of values (``None`` without a ``count``), computed without building them."""
    return _axis_sizes(_validated(space), ())


def _axis_sizes(space: Mapping[str, Any], route: tuple[str, ...]) -> list[tuple[str, int | None]]:
    sizes: list[tuple[str, int | None]] = []
    for name in canonical_order(space):
        spec = space[name]
        if isinstance(spec, Mapping):
            sizes.extend(_axis_sizes(spec, (*route, name)))
        else:
            sizes.append((".".join((*route, name)), _axis_size(spec)))
    return sizes


def grid_hparams(space: Mapping[str, Any]) -> list[dict[str, Any]]:
    """Every point of the hyperparameter grid, as Determined's grid searcher builds it.

    Axes are the hyperparameters in :func:`canonical_order` (nested groups expanded in
    place, also sorted); the first axis varies slowest. So the points and their order depend
    only on the space's contents, never on its key order; each point has the space's key
    order. const: its one value; categorical: all ``vals`` in order; int/double/log need
    ``count`` (ConfigError naming each one without). ``count == 1`` gives the midpoint (for
    log, of the exponents); otherwise ``count`` evenly spaced points including both ends.
    int points are rounded half away from zero, and ``count`` is capped at the number of
    integers in the range, so int values never repeat. An empty space gives one empty
    point: ``[{}]``.
    """
    typed = _validated(space)
    missing = missing_grid_counts(typed, _PREFIX)
    if missing:
        raise ConfigError(
            [ConfigIssue(format_path(path), message) for path, message in missing],
            "hyperparameters",
        )
    axes = _grid_axes(typed, ())
    points: list[dict[str, Any]] = []
    for combination in itertools.product(*(values for _, values in axes)):
        point: dict[str, Any] = {}
        for (route, _), value in zip(axes, combination, strict=True):
            node = point
            for step in route[:-1]:
                node = node.setdefault(step, {})
            node[route[-1]] = copy.deepcopy(value)
        points.append(_in_space_order(point, typed))
    return points


def flatten_hparams(values: Mapping[str, Any]) -> dict[str, Any]:
    """Nested hyperparameter values with dotted keys: ``{"opt": {"lr": 1}}`` -> ``{"opt.lr": 1}``.

    Every mapping value is treated as a group and flattened, in the input's key order.
    """
    flat: dict[str, Any] = {}
    for name, value in values.items():
        if isinstance(value, Mapping):
            for sub, leaf in flatten_hparams(value).items():
                flat[f"{name}.{sub}"] = leaf
        else:
            flat[str(name)] = value
    return flat
