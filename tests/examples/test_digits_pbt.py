"""The digits example's PBT search: a copy can start from its parent's weights."""

from __future__ import annotations

import random
from pathlib import Path

from pedl.config import load_config, sample_hparams
from pedl.searcher import explore_hparams

EXAMPLE = Path(__file__).parents[2] / "examples" / "digits_keras"

LAYER_SIZES = ("conv_filters", "dense_units")
"""The hyperparameters that shape the model's weights (``model_def.DigitsTrial``)."""


def test_pbt_copies_keep_their_parents_layer_sizes() -> None:
    # A copy whose dense_units differed from its parent's failed to load the parent's
    # checkpoint (CheckpointMismatchError) and counted as the worst member.
    config = load_config(EXAMPLE / "pbt.yaml")
    space = config.hyperparameters
    explore = config.searcher.explore_function
    rng = random.Random(0)
    for _ in range(200):
        parent = sample_hparams(space, rng)
        copy = explore_hparams(
            space,
            parent,
            rng,
            resample_probability=explore.resample_probability,
            perturb_factor=explore.perturb_factor,
        )
        assert {k: copy[k] for k in LAYER_SIZES} == {k: parent[k] for k in LAYER_SIZES}
