"""Checks that span several sections; they run on the raw config beside field validation,
so that their problems are reported together with every other problem."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from pedl.config._issues import PathElement, Problem

_GRID_TYPES = ("int", "double", "log")


def check_cross_field(data: Mapping[Any, Any]) -> list[Problem]:
    """Problems that no single field can see; malformed sections are left to validation.

    - a length in epochs (``min_validation_period``, ``min_checkpoint_period``,
      ``searcher.max_length``) needs ``records_per_epoch > 0``;
    - under the grid searcher every int/double/log hyperparameter needs a ``count``.
    """
    problems: list[Problem] = []
    records = data.get("records_per_epoch", 0)
    if isinstance(records, int) and not isinstance(records, bool) and records <= 0:
        searcher = data.get("searcher")
        candidates: list[tuple[tuple[PathElement, ...], Any]] = [
            (("min_validation_period",), data.get("min_validation_period")),
            (("min_checkpoint_period",), data.get("min_checkpoint_period")),
        ]
        if isinstance(searcher, Mapping):
            candidates.append((("searcher", "max_length"), searcher.get("max_length")))
        for path, length in candidates:
            if isinstance(length, Mapping) and list(length) == ["epochs"]:
                problems.append(
                    (
                        (*path, "epochs"),
                        "a length in epochs needs records_per_epoch > 0; set records_per_epoch "
                        "to the number of records in one epoch, or use batches or records",
                    )
                )
    searcher = data.get("searcher")
    hyperparameters = data.get("hyperparameters")
    if (
        isinstance(searcher, Mapping)
        and searcher.get("name") == "grid"
        and isinstance(hyperparameters, Mapping)
    ):
        problems.extend(missing_grid_counts(hyperparameters, ("hyperparameters",)))
    return problems


def missing_grid_counts(space: Mapping[Any, Any], prefix: tuple[PathElement, ...]) -> list[Problem]:
    """One problem per int/double/log hyperparameter (nested groups too) without ``count``.

    Paths start with ``prefix``. Works on raw mappings and on validated models alike.
    """
    return _missing_counts(space, prefix, len(prefix))


def _missing_counts(
    space: Mapping[Any, Any], prefix: tuple[PathElement, ...], root: int
) -> list[Problem]:
    problems: list[Problem] = []
    for name, spec in space.items():
        path = (*prefix, name)
        if isinstance(spec, Mapping):
            kind = spec.get("type")
            if "type" not in spec:
                problems.extend(_missing_counts(spec, path, root))
                continue
            count = spec.get("count")
        else:
            kind = getattr(spec, "type", None)
            count = getattr(spec, "count", None)
        if kind in _GRID_TYPES and count is None:
            problems.append(
                (
                    (*path, "count"),
                    f"the grid searcher needs 'count' (the number of grid points) for "
                    f"{kind} hyperparameter '{'.'.join(str(p) for p in path[root:])}'",
                )
            )
    return problems
