"""The ``single`` searcher: one trial."""

from __future__ import annotations

import random
from collections.abc import Callable
from typing import Any

from pedl.searcher._trial_pool import TrialPoolSearch


class SingleSearch(TrialPoolSearch):
    """One trial with hyperparameters drawn once by ``sample``, trained to ``max_length``.

    ``sample(rng)`` returns a hyperparameter dict (constants stay constants) and must draw
    only from ``rng``.
    """

    def __init__(
        self, *, sample: Callable[[random.Random], dict[str, Any]], max_length: int, seed: int
    ) -> None:
        super().__init__(num_trials=1, max_length=max_length, max_concurrent_trials=1, seed=seed)
        self._sample = sample

    def _hparams_for(self, index: int) -> dict[str, Any]:
        return self._sample(self._rng)
