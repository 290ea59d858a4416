"""The digits example: its configs load, its model definition passes --test, const.yaml learns."""

from __future__ import annotations

from pathlib import Path

import pytest

from pedl.config import load_config
from pedl.local import LocalExperiment, smoke_test

EXAMPLE = Path(__file__).parents[2] / "examples" / "digits_keras"


@pytest.mark.parametrize(
    "name", ["const.yaml", "grid.yaml", "random.yaml", "adaptive.yaml", "pbt.yaml", "pareto.yaml"]
)
def test_configs_load(name: str) -> None:
    config = load_config(EXAMPLE / name)
    assert config.searcher.metric == "val_accuracy"


def test_model_definition_passes_the_smoke_test() -> None:
    steps = smoke_test(EXAMPLE / "grid.yaml", EXAMPLE)
    assert [s.ok for s in steps] == [True] * 4, steps


@pytest.mark.slow
def test_const_reaches_95_percent_validation_accuracy(tmp_path: Path) -> None:
    exp = LocalExperiment.create(EXAMPLE / "const.yaml", EXAMPLE, tmp_path)
    summary = exp.run()
    exp.close()
    assert summary.state == "COMPLETED"
    (trial,) = summary.trials
    assert trial.best_metric is not None and trial.best_metric >= 0.95, trial
