"""Which estimator tests run where.

``test_trial.py`` needs ``tf.estimator`` in the test process: it runs in the TensorFlow 2.15
environment (``make test`` runs ``.venv-estimator/bin/pytest tests/estimator``) and is not
collected in the main one. The other files run in the main environment (TensorFlow 2.21):
the message of a trial started there, and experiments on a master whose trials run with the
estimator environment's Python (``PEDL_TRIAL_PYTHON``).
"""

from __future__ import annotations

import importlib.util
import os
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]
EXAMPLE = ROOT / "examples" / "iris_estimator"
ESTIMATOR_VENV = ROOT / ".venv-estimator"
HAS_ESTIMATOR = importlib.util.find_spec("tensorflow_estimator") is not None

collect_ignore = ["test_master.py", "test_unavailable.py"] if HAS_ESTIMATOR else ["test_trial.py"]


@pytest.fixture(scope="session")
def estimator_python() -> Path:
    """The estimator environment's Python (``make .venv-estimator``); CI must have it."""
    python = ESTIMATOR_VENV / "bin" / "python"
    if not python.exists():
        message = f"{python} is missing: run `make .venv-estimator` (make test does)"
        if os.environ.get("CI"):
            pytest.fail(message, pytrace=False)
        pytest.skip(message)
    return python
