"""``tf.estimator``, or an error that says exactly what to install.

TensorFlow removed ``tf.estimator`` in 2.16. EstimatorTrial therefore runs with TensorFlow 2.15
and tensorflow-estimator 2.15 in an environment of its own; every module of this package takes
``tf.estimator`` from here, so the first one imported says what is missing.
"""

from __future__ import annotations

import sys
from types import ModuleType
from typing import Any

ESTIMATOR_REQUIREMENTS = "tensorflow-cpu==2.15.1 tensorflow-estimator==2.15.0 'numpy<2'"
"""What an estimator environment holds besides PEDL (the ``pedl[estimator]`` extra)."""

INSTALL_HINT = (
    "Create an environment for estimator trials with Python 3.11: "
    "`python3.11 -m venv .venv-estimator && .venv-estimator/bin/pip install 'pedl[estimator]'` "
    f"(that is PEDL plus {ESTIMATOR_REQUIREMENTS}; in a PEDL checkout: `make .venv-estimator`). "
    "Then run the experiment with that Python: on a master, add "
    "`PEDL_TRIAL_PYTHON=/absolute/path/to/.venv-estimator/bin/python` to the experiment's "
    "environment.environment_variables; locally, use `.venv-estimator/bin/pedl experiment "
    "create --local ...`."
)


class EstimatorUnavailableError(ImportError):
    """This Python has no ``tf.estimator`` (TensorFlow missing, or 2.16 and later)."""


def load_estimator() -> ModuleType:
    """Return ``tf.estimator``; raise :class:`EstimatorUnavailableError` saying what to install
    when this Python does not have it."""
    missing: str | None = None
    try:
        import tensorflow as tf
    except ImportError as err:  # raised below, outside this block: no chained ImportError
        missing = f"TensorFlow is not installed ({err})"
    else:
        estimator = getattr(tf, "estimator", None)
        if isinstance(estimator, ModuleType) and hasattr(estimator, "Estimator"):
            return estimator
        missing = (
            f"this Python has TensorFlow {tf.__version__}, and tf.estimator is gone from "
            "TensorFlow 2.16 on"
        )
    raise EstimatorUnavailableError(
        f"EstimatorTrial needs tf.estimator (TensorFlow 2.15 with tensorflow-estimator 2.15), "
        f"but {missing} ({sys.executable}). {INSTALL_HINT}"
    )


tf_estimator: Any = load_estimator()
"""``tf.estimator`` (importing this module raises :class:`EstimatorUnavailableError` where it
is missing)."""
