"""PEDL: a training platform for TensorFlow and Keras."""

from pedl._trial import Trial, TrialController
from pedl.engine import InvalidHP, TrialOutcome

__version__ = "0.1.0"

__all__ = ["InvalidHP", "Trial", "TrialController", "TrialOutcome", "__version__"]
