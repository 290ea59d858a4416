"""Translation of legacy PEDL / old Determined field names into the canonical ones."""

from __future__ import annotations

from typing import Any

from pedl.config._issues import PathElement, Problem

Aliases = dict[tuple[PathElement, ...], tuple[PathElement, ...]]
"""Canonical path -> the path the user actually wrote, for fields that were renamed."""

REMOVED_SEARCHERS: dict[str, str] = {
    "adaptive": "Determined's removed 'adaptive' searcher (now 'adaptive_asha') is not supported",
    "adaptive_simple": (
        "Determined's removed 'adaptive_simple' searcher (now 'adaptive_asha') is not supported"
    ),
    "sync_halving": (
        "Determined's removed 'sync_halving' searcher (now 'async_halving') is not supported"
    ),
}
"""Searcher names Determined no longer has -> what to tell the user (the config's
runnability check adds the names PEDL can run)."""

_STEP_LENGTHS = ("max_steps", "target_trial_steps")


def _is_int(value: Any) -> bool:
    return isinstance(value, int) and not isinstance(value, bool)


def _rename(
    section: dict[Any, Any],
    prefix: tuple[PathElement, ...],
    old: str,
    new: str,
    problems: list[Problem],
    aliases: Aliases,
) -> bool:
    """Move ``section[old]`` to ``section[new]``; False (and a problem) if both are given."""
    if new in section:
        problems.append(
            ((*prefix, old), f"give either '{new}' or its legacy name '{old}', not both")
        )
        del section[old]
        return False
    section[new] = section.pop(old)
    aliases[(*prefix, new)] = (*prefix, old)
    return True


def _steps_to_length(value: Any, unit: int) -> dict[str, Any] | None:
    if not _is_int(value) or value < 0:
        return None
    return {"batches": value * unit}


def apply_legacy(data: dict[Any, Any]) -> tuple[list[Problem], Aliases]:
    """Rewrite legacy fields of a raw config mapping in place; return problems and aliases.

    - ``batches_per_step`` is the old name of ``scheduling_unit`` (giving both is an error);
    - an integer ``min_validation_period``/``min_checkpoint_period`` counts scheduling
      units ("steps"): it becomes ``{batches: n * scheduling_unit}``;
    - ``searcher.max_steps`` (legacy PEDL) and ``searcher.target_trial_steps`` (old
      adaptive searchers) become ``max_length: {batches: n * scheduling_unit}``;
    - ``searcher.step_budget`` is reported with the fields to use instead (removed searcher
      names are reported by the runnability check).
    """
    problems: list[Problem] = []
    aliases: Aliases = {}
    if "batches_per_step" in data:
        _rename(data, (), "batches_per_step", "scheduling_unit", problems, aliases)
    unit = data.get("scheduling_unit", 100)
    if not _is_int(unit) or unit < 1:
        unit = 100

    for period in ("min_validation_period", "min_checkpoint_period"):
        value = data.get(period)
        if _is_int(value):
            length = _steps_to_length(value, unit)
            if length is None:
                problems.append(((period,), f"must be >= 0 steps, got {value}"))
                del data[period]
            else:
                data[period] = length

    searcher = data.get("searcher")
    if isinstance(searcher, dict):
        _apply_legacy_searcher(searcher, unit, problems, aliases)
    return problems, aliases


def _apply_legacy_searcher(
    searcher: dict[Any, Any], unit: int, problems: list[Problem], aliases: Aliases
) -> None:
    if "step_budget" in searcher:
        problems.append(
            (
                ("searcher", "step_budget"),
                "'step_budget' is no longer supported; set 'max_trials' (how many trials "
                "to run) and 'max_length' (how long each may train) instead",
            )
        )
        del searcher["step_budget"]
    for old in _STEP_LENGTHS:
        if old not in searcher:
            continue
        value = searcher[old]
        if not _rename(searcher, ("searcher",), old, "max_length", problems, aliases):
            continue
        length = _steps_to_length(value, unit)
        if length is None:
            problems.append(
                (
                    ("searcher", old),
                    f"expected a non-negative integer number of steps, got {value!r}",
                )
            )
            del searcher["max_length"]
        else:
            searcher["max_length"] = length
