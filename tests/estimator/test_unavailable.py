"""An EstimatorTrial started where ``tf.estimator`` is missing (this, the main environment, has
TensorFlow 2.21) fails before training with a message saying exactly what to install."""

from __future__ import annotations

from pathlib import Path

from pedl import core
from pedl.config import parse_config
from pedl.exec import run_attempt
from pedl.storage import SharedFSStorage
from pedl.vocabulary import TrialOutcome

from .conftest import EXAMPLE


def test_an_estimator_trial_without_tf_estimator_says_what_to_install(tmp_path: Path) -> None:
    config = parse_config((EXAMPLE / "const.yaml").read_text())
    records = core.MemoryBackend([4])

    def build_context() -> core.Context:
        info = core.TrialInfo(
            trial_id=1,
            experiment_id=1,
            hparams={"global_batch_size": 16, "learning_rate": 0.05},
            trial_seed=1,
            config=config,
            code_dir=EXAMPLE,
        )
        return core.build_context(
            info,
            backend=records,
            storage=SharedFSStorage(tmp_path),
        )

    result = run_attempt(EXAMPLE, config.entrypoint, build_context)
    assert result.outcome is TrialOutcome.ERRORED
    assert result.stage == "load"  # no restart repairs it
    error = result.error
    assert error is not None and error.before_progress
    assert error.type == "EstimatorUnavailableError"
    source = (EXAMPLE / "model_def.py").read_text().splitlines()
    line = source.index("from pedl.estimator import EstimatorTrial, EstimatorTrialContext") + 1
    assert error.location == f"model_def.py:{line}"  # the user's import of pedl.estimator
    for needed in (
        "TensorFlow 2.21",
        "tensorflow-cpu==2.15.1 tensorflow-estimator==2.15.0 'numpy<2'",
        "pip install 'pedl[estimator]'",
        "make .venv-estimator",
        "PEDL_TRIAL_PYTHON=/absolute/path/to/.venv-estimator/bin/python",
    ):
        assert needed in error.message, (needed, error.message)
    assert not records.writes and not records.checkpoints
