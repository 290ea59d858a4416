"""The Keras-form examples (Determined's API through ``determined``, and the PEDL 0.x form)
pass ``pedl experiment create --test`` with their const.yaml."""

from __future__ import annotations

from pathlib import Path

import pytest

from pedl.config import load_config
from pedl.local import smoke_test

EXAMPLES = Path(__file__).parents[2] / "examples"


@pytest.mark.slow
@pytest.mark.parametrize("name", ["digits_determined_keras", "iris_pedl0x_keras"])
def test_example_passes_the_smoke_test(name: str) -> None:
    example = EXAMPLES / name
    assert load_config(example / "const.yaml").searcher.metric == "val_accuracy"
    steps = smoke_test(example / "const.yaml", example)
    assert [s.ok for s in steps] == [True] * len(steps), steps
