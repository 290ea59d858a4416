"""PEDL: a training platform for TensorFlow and Keras."""

from pedl._trial import Trial, TrialController, TrialOutcome

__version__ = "0.1.0"

__all__ = ["Trial", "TrialController", "TrialOutcome", "__version__"]
