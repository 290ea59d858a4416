"""Train TensorFlow graphs with PEDL: the TensorFlowTrial API (``tf.compat.v1`` graph and
session). Users of the PEDL 0.x API import it from ``pedl.frameworks.tensorflow``.

Importing this package imports TensorFlow.
"""

from pedl.tensorflow._controller import (
    CHECKPOINT_FORMAT,
    MODEL_DIR,
    MODEL_PREFIX,
    TensorFlowTrialController,
    TrialError,
)
from pedl.tensorflow._trial import TensorFlowTrial

__all__ = [
    "CHECKPOINT_FORMAT",
    "MODEL_DIR",
    "MODEL_PREFIX",
    "TensorFlowTrial",
    "TensorFlowTrialController",
    "TrialError",
]
