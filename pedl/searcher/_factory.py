"""Building the searcher an experiment config asks for."""

from __future__ import annotations

import functools

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


def make_search_method(config: ExperimentConfig) -> SearchMethod:
    """Return a fresh searcher for ``config.searcher``, seeded with the experiment seed.

    Supports ``single`` (one trial, hyperparameters drawn like one random draw, as in
    Determined), ``grid`` and ``random``. Lengths are ``searcher.max_length.value``, in the
    unit ``searcher.max_length.unit``. Other searcher names raise :class:`SearcherError`.
    """
    searcher = config.searcher
    seed = config.reproducibility.experiment_seed
    space = config.hyperparameters
    sample = functools.partial(sample_hparams, space)
    if isinstance(searcher, SingleSearcherConfig):
        return SingleSearch(sample=sample, max_length=searcher.max_length.value, seed=seed)
    if isinstance(searcher, GridSearcherConfig):
        return GridSearch(
            points=grid_hparams(space),
            max_length=searcher.max_length.value,
            max_concurrent_trials=searcher.max_concurrent_trials,
            seed=seed,
        )
    if isinstance(searcher, RandomSearcherConfig):
        return RandomSearch(
            sample=sample,
            max_trials=searcher.max_trials,
            max_length=searcher.max_length.value,
            max_concurrent_trials=searcher.max_concurrent_trials,
            seed=seed,
        )
    raise SearcherError(
        f"The searcher {searcher.name!r} is not available; use single, grid or random."
    )
