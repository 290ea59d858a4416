"""PEDL: a training platform for TensorFlow and Keras."""

from pedl._trial import Trial

__version__ = "0.1.0"

__all__ = ["Trial", "__version__"]
