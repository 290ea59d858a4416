"""A small conv net on scikit-learn's digits data set (8x8 grey images, 10 classes)."""

from .model_def import DigitsTrial

__all__ = ["DigitsTrial"]
