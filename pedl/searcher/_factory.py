"""Building the searcher an experiment config asks for."""

from __future__ import annotations

import functools
from collections.abc import Callable

from pedl.config import (
    ExperimentConfig,
    GridSearcherConfig,
    RandomSearcherConfig,
    SingleSearcherConfig,
    grid_hparams,
    sample_hparams,
)
from pedl.searcher._errors import SearcherError
from pedl.searcher._grid import GridSearch
from pedl.searcher._random import RandomSearch
from pedl.searcher._search_method import SearchMethod
from pedl.searcher._single import SingleSearch


def _single(config: ExperimentConfig) -> SearchMethod:
    searcher = config.searcher
    assert isinstance(searcher, SingleSearcherConfig)
    return SingleSearch(
        sample=functools.partial(sample_hparams, config.hyperparameters),
        max_length=searcher.max_length.value,
        seed=config.reproducibility.experiment_seed,
    )


def _grid(config: ExperimentConfig) -> SearchMethod:
    searcher = config.searcher
    assert isinstance(searcher, GridSearcherConfig)
    return GridSearch(
        points=grid_hparams(config.hyperparameters),
        max_length=searcher.max_length.value,
        max_concurrent_trials=searcher.max_concurrent_trials,
        seed=config.reproducibility.experiment_seed,
    )


def _random(config: ExperimentConfig) -> SearchMethod:
    searcher = config.searcher
    assert isinstance(searcher, RandomSearcherConfig)
    return RandomSearch(
        sample=functools.partial(sample_hparams, config.hyperparameters),
        max_trials=searcher.max_trials,
        max_length=searcher.max_length.value,
        max_concurrent_trials=searcher.max_concurrent_trials,
        seed=config.reproducibility.experiment_seed,
    )


_BUILDERS: dict[str, Callable[[ExperimentConfig], SearchMethod]] = {
    "single": _single,
    "grid": _grid,
    "random": _random,
}

RUNNABLE_SEARCHERS: tuple[str, ...] = tuple(_BUILDERS)
"""The ``searcher.name`` values PEDL can run, in the order they are listed to users.

Config validation (:mod:`pedl.config`) refuses every other name; adding a searcher means
adding its builder to ``_BUILDERS``.
"""


def make_search_method(config: ExperimentConfig) -> SearchMethod:
    """Return a fresh searcher for ``config.searcher``, seeded with the experiment seed.

    Supports ``single`` (one trial, hyperparameters drawn like one random draw, as in
    Determined), ``grid`` and ``random`` (:data:`RUNNABLE_SEARCHERS`). Lengths are
    ``searcher.max_length.value``, in the unit ``searcher.max_length.unit``. Other searcher
    names raise :class:`SearcherError` (validated configs never have them).
    """
    build = _BUILDERS.get(config.searcher.name)
    if build is None:
        raise SearcherError(
            f"The searcher {config.searcher.name!r} is not available; use "
            f"{', '.join(RUNNABLE_SEARCHERS)}."
        )
    return build(config)
