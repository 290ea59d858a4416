"""Determined's ``adaptive_asha``: several brackets of asynchronous successive halving, run
side by side in one search (the paper's asynchronous Hyperband over early-stopping rates).

How the brackets are chosen (Determined's rules):

- **Rungs per bracket.** ``bracket_rungs``, when given, lists them. Otherwise the most
  rungs a bracket may have is ``max_rungs``, lowered so that the shortest rung trains at
  least one unit and so that the bottom rung's trials can fill the top one:
  ``min(max_rungs, floor(log_divisor(max_length)) + 1, floor(log_divisor(max_trials)) + 1)``
  (the logarithms taken exactly); ``mode`` then gives the brackets for that maximum M:
  ``aggressive`` one bracket of M rungs; ``standard`` the brackets of
  ``(M - 1) // 2 + 1`` .. M rungs; ``conservative`` those of 1 .. M rungs. Brackets with
  more rungs (more early stopping) come first.
- **Trials per bracket.** A bracket of r rungs weighs ``divisor ** (r - 1) / r`` (so that
  brackets get a similar share of the training budget); bracket i gets
  ``floor(weight_i / total_weight * max_trials)`` trials, at least 1, and the first bracket
  takes the rest. Where the minimum of 1 would make more than ``max_trials`` in all, the
  largest brackets give one back (and with more brackets than ``max_trials``, only the
  first ``max_trials`` brackets are run): the search never runs more than ``max_trials``.
- **Concurrency per bracket.** ``max_concurrent_trials`` is split evenly, the first
  brackets taking the remainder; it is raised to the number of brackets when lower (each
  bracket runs at least one trial at a time). With 0, each bracket gets
  ``max(trials of the last bracket, floor(divisor))``.

Each bracket then follows the rules of :mod:`pedl.searcher._asha`.
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from typing import Literal

from pedl.searcher._asha import ASHABracket, HalvingSearch, Sampler, rung_lengths
from pedl.searcher._errors import SearcherError

AdaptiveMode = Literal["aggressive", "standard", "conservative"]


def _floor_log(value: int, base: float) -> int:
    """The largest k with ``base ** k <= value`` (``value`` >= 1, ``base`` > 1)."""
    k, power = 0, base
    while power <= value:
        k += 1
        power *= base
    return k


def mode_bracket_rungs(mode: AdaptiveMode, max_rungs: int) -> list[int]:
    """The rungs of each bracket that ``mode`` asks for, given the most rungs a bracket has."""
    if mode == "aggressive":
        return [max_rungs]
    if mode == "standard":
        return list(range((max_rungs - 1) // 2 + 1, max_rungs + 1))
    if mode == "conservative":
        return list(range(1, max_rungs + 1))
    raise SearcherError(
        f"Unknown adaptive mode {mode!r}; use aggressive, standard or conservative."
    )


def plan_brackets(
    *,
    max_length: int,
    max_trials: int,
    divisor: float,
    mode: AdaptiveMode = "standard",
    max_rungs: int = 5,
    bracket_rungs: Sequence[int] = (),
    max_concurrent_trials: int = 16,
) -> list[ASHABracket]:
    """The brackets of an ``adaptive_asha`` search, most rungs first (see the module)."""
    if max_length < 1 or max_trials < 1 or max_rungs < 1 or max_concurrent_trials < 0:
        raise SearcherError(
            f"Invalid adaptive_asha settings: max_length={max_length} (>= 1), max_trials="
            f"{max_trials} (>= 1), max_rungs={max_rungs} (>= 1), max_concurrent_trials="
            f"{max_concurrent_trials} (>= 0)."
        )
    if not divisor > 1:
        raise SearcherError(f"Invalid adaptive_asha settings: divisor={divisor} (> 1).")
    if bracket_rungs:
        if any(r < 1 for r in bracket_rungs):
            raise SearcherError(f"bracket_rungs must all be >= 1, got {list(bracket_rungs)}.")
        rungs = list(bracket_rungs)
    else:
        most = min(
            max_rungs,
            _floor_log(max_length, divisor) + 1,
            _floor_log(max_trials, divisor) + 1,
        )
        rungs = mode_bracket_rungs(mode, most)
    rungs = sorted(rungs, reverse=True)[:max_trials]
    trials = _split_trials(max_trials, divisor, rungs)
    limits = _split_concurrency(max_concurrent_trials, divisor, trials)
    return [
        ASHABracket(r, tuple(rung_lengths(max_length, r, divisor)), n, c)
        for r, n, c in zip(rungs, trials, limits, strict=True)
    ]


def _split_trials(max_trials: int, divisor: float, rungs: list[int]) -> list[int]:
    # weight_i / total_weight, in logarithms so that no power of the divisor overflows
    logs = [(r - 1) * math.log(divisor) - math.log(r) for r in rungs]
    top = max(logs)
    total = sum(math.exp(x - top) for x in logs)
    shares = [max(int(math.exp(x - top) / total * max_trials), 1) for x in logs]
    extra = max_trials - sum(shares)
    if extra >= 0:
        shares[0] += extra
    while extra < 0:  # the minimum of 1 overshot: the largest share gives one back
        largest = max(range(len(shares)), key=lambda i: (shares[i], -i))
        shares[largest] -= 1
        extra += 1
    return shares


def _split_concurrency(max_concurrent_trials: int, divisor: float, trials: list[int]) -> list[int]:
    count = len(trials)
    if max_concurrent_trials == 0:
        return [max(trials[-1], int(divisor))] * count
    limit = max(max_concurrent_trials, count)
    return [limit // count + (1 if i < limit % count else 0) for i in range(count)]


class AdaptiveASHASearch(HalvingSearch):
    """Determined's ``adaptive_asha``: the brackets :func:`plan_brackets` chooses, run as one
    search (see the rules of :mod:`pedl.searcher._asha` and of this module). With
    ``directions`` (each objective's ``smaller_is_better``, two or more), rungs are ranked
    by Pareto rank, ties broken by hypervolume contribution (multi-objective ASHA)."""

    def __init__(
        self,
        *,
        sample: Sampler,
        max_length: int,
        max_trials: int,
        divisor: float = 4.0,
        mode: AdaptiveMode = "standard",
        max_rungs: int = 5,
        bracket_rungs: Sequence[int] = (),
        max_concurrent_trials: int = 16,
        smaller_is_better: bool = True,
        stop_once: bool = False,
        seed: int,
        directions: Sequence[bool] = (),
    ) -> None:
        super().__init__(
            sample=sample,
            brackets=plan_brackets(
                max_length=max_length,
                max_trials=max_trials,
                divisor=divisor,
                mode=mode,
                max_rungs=max_rungs,
                bracket_rungs=bracket_rungs,
                max_concurrent_trials=max_concurrent_trials,
            ),
            divisor=divisor,
            smaller_is_better=smaller_is_better,
            stop_once=stop_once,
            seed=seed,
            directions=directions,
        )
