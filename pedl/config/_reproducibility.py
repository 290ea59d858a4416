"""The ``reproducibility`` section: the experiment's random seed."""

from __future__ import annotations

import time

from pydantic import Field

from pedl.config._base import ConfigModel

MAX_SEED = 2**32 - 1


def seed_from_clock() -> int:
    """Determined's default seed: the current Unix time in seconds, as an unsigned 32-bit int."""
    return int(time.time()) & MAX_SEED


class ReproducibilityConfig(ConfigModel):
    """``experiment_seed`` seeds the searcher and, through it, every trial's RNGs.

    When absent it defaults, like Determined, to the current Unix time in seconds, fixed
    at the moment the config is parsed (``as_dict`` then records it, so a stored config
    reproduces the experiment).
    """

    experiment_seed: int = Field(default_factory=seed_from_clock, ge=0, le=MAX_SEED)
