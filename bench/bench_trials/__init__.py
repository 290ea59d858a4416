"""The models and data the benchmarks train, as plain builders and as TFKerasTrials.

The same builder functions serve the plain ``model.fit`` runs and PEDL's trials, so both
sides train the same model on the same arrays. The case is the ``case`` hyperparameter:

- ``tiny``: the digits conv net (scikit-learn ``load_digits``, 8x8x1, 10 classes);
- ``large``: an MLP on 100k synthetic samples (steps of several ms on a 2-core CPU);
- ``huge``: a ~25M-parameter MLP (with Adam, ~300 MB of state) for checkpoint benchmarks.

This directory is also the ``code_dir`` PEDL copies into each checkpoint.
"""

from __future__ import annotations

from typing import Any

import keras
import numpy as np
from sklearn.datasets import load_digits

from pedl.keras import TFKerasTrial, TFKerasTrialContext

Arrays = tuple[np.ndarray, np.ndarray]

BATCH_SIZE = {"tiny": 32, "large": 256, "huge": 32}
LARGE_SAMPLES = 100_000
LARGE_FEATURES = 256
LARGE_HIDDEN = 512
HUGE_FEATURES = 1024


def training_data(case: str) -> Arrays:
    """The training arrays of ``case`` (deterministic)."""
    if case == "tiny":
        digits = load_digits()
        x = (digits.images / 16.0).astype("float32")[..., None]
        return x, digits.target.astype("int32")
    rng = np.random.default_rng(0)
    n, features = (LARGE_SAMPLES, LARGE_FEATURES) if case == "large" else (256, HUGE_FEATURES)
    x = rng.standard_normal((n, features), dtype=np.float32)
    y = (x[:, :10].argmax(axis=1)).astype("int32")
    return x, y


def validation_data(case: str) -> Arrays:
    """A small slice of the training arrays (validation is excluded from every timing)."""
    x, y = training_data(case)
    return x[:256], y[:256]


def build_model(case: str) -> keras.Model:
    """The uncompiled model of ``case``."""
    if case == "tiny":
        return keras.Sequential(
            [
                keras.Input((8, 8, 1)),
                keras.layers.Conv2D(32, 3, activation="relu"),
                keras.layers.MaxPooling2D(),
                keras.layers.Flatten(),
                keras.layers.Dense(64, activation="relu"),
                keras.layers.Dropout(0.2),
                keras.layers.Dense(10),
            ]
        )
    if case == "large":
        return keras.Sequential(
            [
                keras.Input((LARGE_FEATURES,)),
                keras.layers.Dense(LARGE_HIDDEN, activation="relu"),
                keras.layers.Dense(LARGE_HIDDEN, activation="relu"),
                keras.layers.Dense(10),
            ]
        )
    return keras.Sequential(
        [
            keras.Input((HUGE_FEATURES,)),
            keras.layers.Dense(4096, activation="relu"),
            keras.layers.Dense(4096, activation="relu"),
            keras.layers.Dense(1024, activation="relu"),
            keras.layers.Dense(10),
        ]
    )


def compile_model(model: keras.Model) -> None:
    model.compile(
        optimizer=keras.optimizers.Adam(1e-3),
        loss=keras.losses.SparseCategoricalCrossentropy(from_logits=True),
        metrics=["accuracy"],
    )


class BenchTrial(TFKerasTrial):
    """The benchmark model of the ``case`` hyperparameter, trained by PEDL."""

    def __init__(self, context: TFKerasTrialContext) -> None:
        super().__init__(context)
        self.case = str(context.get_hparam("case"))

    def build_model(self) -> keras.Model:
        model = self.context.wrap_model(build_model(self.case))
        compile_model(model)
        return model

    def build_training_data_loader(self) -> Any:
        return training_data(self.case)

    def build_validation_data_loader(self) -> Any:
        return validation_data(self.case)
