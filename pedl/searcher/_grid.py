"""The ``grid`` searcher: one trial per point of the hyperparameter grid."""

from __future__ import annotations

import copy
from collections.abc import Sequence
from typing import Any

from pedl.searcher._trial_pool import TrialPoolSearch


class GridSearch(TrialPoolSearch):
    """One trial per grid point, in the order of ``points``, each trained to ``max_length``.

    ``points`` is the full grid (e.g. ``pedl.config.grid_hparams(space)``); the searcher's
    generator (seeded with ``seed``) only draws the trial seeds.
    """

    def __init__(
        self,
        *,
        points: Sequence[dict[str, Any]],
        max_length: int,
        max_concurrent_trials: int = 0,
        seed: int,
    ) -> None:
        super().__init__(
            num_trials=len(points),
            max_length=max_length,
            max_concurrent_trials=max_concurrent_trials,
            seed=seed,
        )
        self._points = [copy.deepcopy(dict(p)) for p in points]

    def _hparams_for(self, index: int) -> dict[str, Any]:
        return copy.deepcopy(self._points[index])
