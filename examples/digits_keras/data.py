"""The digits data set, which ships inside scikit-learn: no download needed."""

from __future__ import annotations

import numpy as np
from sklearn.datasets import load_digits


def load(validation_fraction: float, seed: int = 0) -> tuple[tuple[np.ndarray, np.ndarray], ...]:
    """((x_train, y_train), (x_val, y_val)): images scaled to [0, 1], shape (n, 8, 8, 1)."""
    digits = load_digits()
    x = (digits.images / 16.0).astype("float32")[..., np.newaxis]
    y = digits.target.astype("int32")
    order = np.random.default_rng(seed).permutation(len(x))
    n_val = round(len(x) * validation_fraction)
    val, train = order[:n_val], order[n_val:]
    return (x[train], y[train]), (x[val], y[val])
