"""The script and TensorFlowTrial digits examples: configs load, const learns in a short local
run. (``experiment create --test`` of each form: tests/script, tests/tensorflow.)"""

from __future__ import annotations

from pathlib import Path

import pytest

from pedl.config import load_config
from pedl.local import LocalExperiment
from pedl.model_def import unload

EXAMPLES = Path(__file__).parents[2] / "examples"
SCRIPT = EXAMPLES / "digits_script"
TENSORFLOW = EXAMPLES / "digits_tensorflow"


@pytest.fixture(autouse=True)
def _unload() -> None:
    unload()


@pytest.mark.parametrize(
    ("example", "name", "metric"),
    [
        (SCRIPT, "const.yaml", "val_accuracy"),
        (SCRIPT, "random.yaml", "val_accuracy"),
        (TENSORFLOW, "const.yaml", "accuracy"),
        (TENSORFLOW, "grid.yaml", "accuracy"),
    ],
)
def test_configs_load(example: Path, name: str, metric: str) -> None:
    assert load_config(example / name).searcher.metric == metric


@pytest.mark.slow
@pytest.mark.parametrize("example", [SCRIPT, TENSORFLOW], ids=["script", "tensorflow"])
def test_two_epochs_reach_90_percent_validation_accuracy(example: Path, tmp_path: Path) -> None:
    exp = LocalExperiment.create(
        example / "const.yaml",
        example,
        tmp_path,
        overrides=["searcher.max_length.epochs=2", "min_checkpoint_period.epochs=2"],
    )
    summary = exp.run()
    exp.close()
    assert summary.state == "COMPLETED"
    (trial,) = summary.trials
    assert trial.best_metric is not None and trial.best_metric >= 0.9, trial
