"""A script model definition on two worker processes (issue 20): Determined 0.38's iris
TF-Keras pattern through the ``determined`` alias (``from_tf_config()``, ``core.init``, the
model built in the strategy's scope, ``DeterminedCallback``), run as the trial process runs
a model definition, each worker started as a launcher starts it."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest

from pedl.vocabulary import MetricKind
from tests.keras.multiworker import run_workers

HERE = Path(__file__).parent

pytestmark = pytest.mark.slow


def test_determined_iris_pattern_trains_on_two_workers(tmp_path: Path) -> None:
    job = {
        "model_dir": str(HERE / "det_iris_model"),
        "config": "const.yaml",
        "hparams": {"global_batch_size": 16},
    }
    chief, other = run_workers(job, tmp_path, 2)
    assert chief["outcome"] == other["outcome"] == "COMPLETED", (chief["error"], other["error"])
    for a, b in zip(chief["weights"], other["weights"], strict=True):
        np.testing.assert_array_equal(a, b)
    # Training and validation at the end of each epoch of fit's data (96 records, 6 batches).
    assert [b for _, b in chief["writes"]] == [6, 6, 12, 12]
    assert chief["metrics"][(MetricKind.VALIDATION, 12)]["val_categorical_accuracy"] > 0.5
    assert chief["completed"] and chief["checkpoints"]
    assert other["writes"] == other["checkpoints"] == other["completed"] == []
