"""The ``random`` searcher: ``max_trials`` independent random draws."""

from __future__ import annotations

import random
from collections.abc import Callable
from typing import Any

from pedl.searcher._trial_pool import TrialPoolSearch


class RandomSearch(TrialPoolSearch):
    """``max_trials`` trials, each with hyperparameters drawn by ``sample`` from the
    searcher's ``random.Random(seed)``, each trained to ``max_length``.

    ``sample(rng)`` must draw only from ``rng``, so that the draws (and the trial seeds drawn
    between them) depend only on ``seed`` and the order trials are created. A trial whose
    code raises ``pedl.InvalidHP`` is replaced by a new draw: the search ends with
    ``max_trials`` trials that had valid hyperparameters.
    """

    replace_invalid = True

    def __init__(
        self,
        *,
        sample: Callable[[random.Random], dict[str, Any]],
        max_trials: int,
        max_length: int,
        max_concurrent_trials: int = 0,
        seed: int,
    ) -> None:
        super().__init__(
            num_trials=max_trials,
            max_length=max_length,
            max_concurrent_trials=max_concurrent_trials,
            seed=seed,
        )
        self._sample = sample

    def _hparams_for(self, index: int) -> dict[str, Any]:
        return self._sample(self._rng)
