"""Building the searcher an experiment config asks for."""

from __future__ import annotations

import functools
import random
from collections.abc import Callable
from typing import Any

from pedl.config import (
    MAX_GRID_POINTS,
    OPEN_LENGTH,
    SEARCHER_NAMES,
    AdaptiveASHASearcherConfig,
    AsyncHalvingSearcherConfig,
    ExperimentConfig,
    GridSearcherConfig,
    Length,
    PBTSearcherConfig,
    RandomSearcherConfig,
    SingleSearcherConfig,
    grid_hparams,
    grid_size,
    sample_hparams,
)
from pedl.searcher._adaptive_asha import AdaptiveASHASearch
from pedl.searcher._asha import AsyncHalvingSearch
from pedl.searcher._bayes import (
    gp_from_config,
    missing_optuna_requirements,
    nsga2_from_config,
    tpe_from_config,
)
from pedl.searcher._errors import SearcherError
from pedl.searcher._grid import GridSearch
from pedl.searcher._pbt import PBTSearch
from pedl.searcher._pbt_explore import explore_hparams, validated_space
from pedl.searcher._random import RandomSearch
from pedl.searcher._search_method import SearchMethod
from pedl.searcher._single import SingleSearch


def _length(max_length: Length | None) -> int:
    """``max_length`` in its unit; without it, :data:`OPEN_LENGTH` (the training code decides
    when the trial ends)."""
    return OPEN_LENGTH if max_length is None else max_length.value


def _single(config: ExperimentConfig) -> SearchMethod:
    searcher = config.searcher
    assert isinstance(searcher, SingleSearcherConfig)
    return SingleSearch(
        sample=functools.partial(sample_hparams, config.hyperparameters),
        max_length=_length(searcher.max_length),
        seed=config.reproducibility.experiment_seed,
    )


def _grid(config: ExperimentConfig) -> SearchMethod:
    searcher = config.searcher
    assert isinstance(searcher, GridSearcherConfig)
    # Counted before the grid is built: a config that skipped validation (one stored before
    # the limit existed, one built with model_validate) must not make its shell enumerate
    # a trillion points.
    points = grid_size(config.hyperparameters)
    if points is not None and points > MAX_GRID_POINTS:
        raise SearcherError(
            f"the grid has {points:,} points (one trial each), more than the limit of "
            f"{MAX_GRID_POINTS:,} (PEDL_MAX_GRID_POINTS); lower the hyperparameters' "
            "counts or the number of categorical values"
        )
    return GridSearch(
        points=grid_hparams(config.hyperparameters),
        max_length=_length(searcher.max_length),
        max_concurrent_trials=searcher.max_concurrent_trials,
        seed=config.reproducibility.experiment_seed,
    )


def _random(config: ExperimentConfig) -> SearchMethod:
    searcher = config.searcher
    assert isinstance(searcher, RandomSearcherConfig)
    return RandomSearch(
        sample=functools.partial(sample_hparams, config.hyperparameters),
        max_trials=searcher.max_trials,
        max_length=_length(searcher.max_length),
        max_concurrent_trials=searcher.max_concurrent_trials,
        seed=config.reproducibility.experiment_seed,
    )


def _halving_length(config: ExperimentConfig) -> int:
    length = config.searcher_max_length
    assert length is not None, "validation gives an ASHA search max_length or max_time"
    return length


def _async_halving(config: ExperimentConfig) -> SearchMethod:
    searcher = config.searcher
    assert isinstance(searcher, AsyncHalvingSearcherConfig)
    return AsyncHalvingSearch(
        sample=functools.partial(sample_hparams, config.hyperparameters),
        max_length=_halving_length(config),
        num_rungs=searcher.num_rungs,
        max_trials=searcher.max_trials,
        divisor=searcher.divisor,
        max_concurrent_trials=searcher.max_concurrent_trials,
        smaller_is_better=searcher.smaller_is_better,
        stop_once=searcher.stop_once,
        seed=config.reproducibility.experiment_seed,
    )


def _adaptive_asha(config: ExperimentConfig) -> SearchMethod:
    searcher = config.searcher
    assert isinstance(searcher, AdaptiveASHASearcherConfig)
    return AdaptiveASHASearch(
        sample=functools.partial(sample_hparams, config.hyperparameters),
        max_length=_halving_length(config),
        max_trials=searcher.max_trials,
        divisor=searcher.divisor,
        mode=searcher.mode,
        max_rungs=searcher.max_rungs,
        bracket_rungs=searcher.bracket_rungs,
        max_concurrent_trials=searcher.max_concurrent_trials,
        smaller_is_better=searcher.smaller_is_better,
        stop_once=searcher.stop_once,
        seed=config.reproducibility.experiment_seed,
        directions=_directions(config),
    )


def _directions(config: ExperimentConfig) -> list[bool]:
    """Each objective's ``smaller_is_better`` when the search has several, else empty."""
    searcher = config.searcher
    if not searcher.multi_objective:
        return []
    return [o.smaller_is_better for o in searcher.objectives]


def _pbt(config: ExperimentConfig) -> SearchMethod:
    searcher = config.searcher
    assert isinstance(searcher, PBTSearcherConfig)
    space = validated_space(config.hyperparameters)
    explore = searcher.explore_function

    def explored(parent: dict[str, Any], rng: random.Random) -> dict[str, Any]:
        return explore_hparams(
            space,
            parent,
            rng,
            resample_probability=explore.resample_probability,
            perturb_factor=explore.perturb_factor,
        )

    return PBTSearch(
        sample=functools.partial(sample_hparams, config.hyperparameters),
        explore=explored,
        population_size=searcher.population_size,
        num_rounds=searcher.num_rounds,
        length_per_round=searcher.length_per_round.value,
        truncate_fraction=searcher.replace_function.truncate_fraction,
        smaller_is_better=searcher.smaller_is_better,
        seed=config.reproducibility.experiment_seed,
    )


_BUILDERS: dict[str, Callable[[ExperimentConfig], SearchMethod]] = {
    "single": _single,
    "grid": _grid,
    "random": _random,
    "adaptive_asha": _adaptive_asha,
    "async_halving": _async_halving,
    "tpe": tpe_from_config,
    "nsga2": nsga2_from_config,
    "gp": gp_from_config,
    "pbt": _pbt,
}

CUSTOM = "custom"

RUNNABLE_SEARCHERS: tuple[str, ...] = SEARCHER_NAMES
"""The ``searcher.name`` values PEDL can run, in the order they are listed to users: the
config's :data:`pedl.config.SEARCHER_NAMES` (validation refuses every other name), each built
here. Adding a searcher means adding its config model and name in :mod:`pedl.config` and its
builder to ``_BUILDERS``. A ``custom`` searcher comes from the model definition and runs in a
process of its own: the shells build it (``RemoteSearchMethod``), not
:func:`make_search_method`.
"""


def make_search_method(config: ExperimentConfig) -> SearchMethod:
    """Return a fresh searcher for ``config.searcher``, seeded with the experiment seed.

    Supports ``single`` (one trial, hyperparameters drawn like one random draw, as in
    Determined), ``grid``, ``random``, ``adaptive_asha``, ``async_halving``, ``tpe``,
    ``nsga2`` and ``gp`` (these three need Optuna) and ``pbt`` (:data:`RUNNABLE_SEARCHERS`).
    Lengths are
    :attr:`ExperimentConfig.searcher_max_length` (``searcher.max_length``, or ASHA's
    ``max_time``), in the unit
    :attr:`ExperimentConfig.searcher_unit`. Other searcher names raise
    :class:`SearcherError` (validated configs never have them).
    """
    if config.searcher.name == CUSTOM:
        raise SearcherError(
            "A custom searcher is built from the model definition (RemoteSearchMethod), "
            "not by make_search_method."
        )
    build = _BUILDERS.get(config.searcher.name)
    if build is None:
        raise SearcherError(
            f"The searcher {config.searcher.name!r} is not available; use "
            f"{', '.join(RUNNABLE_SEARCHERS)}."
        )
    return build(config)


def unavailable_reason(config: ExperimentConfig) -> str | None:
    """Why ``config``'s searcher cannot run in this Python environment (an optional
    dependency it needs is missing), or ``None``. Checked where the searcher will run: by the
    master when an experiment is created, and by local mode."""
    if config.searcher.name in ("tpe", "nsga2", "gp"):
        return missing_optuna_requirements(config.searcher.name)
    return None
