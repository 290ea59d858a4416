"""A TensorFlowTrial (PEDL 0.x form) on scikit-learn's digits: a graph built with
``tf.compat.v1``, trained in a session that PEDL runs."""

from .model_def import DigitsTrial, make_data_loaders

__all__ = ["DigitsTrial", "make_data_loaders"]
