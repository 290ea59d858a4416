"""The trial: PEDL builds the model and the data, and trains it."""

from __future__ import annotations

from typing import Any

import keras

from pedl.keras import TFKerasTrial, TFKerasTrialContext

from . import data
from .params_metric import ParameterCount


def network(conv_filters: int, dense_units: int, dropout: float) -> keras.Sequential:
    """The model's layers for these hyperparameters (the benchmarks build the same one)."""
    return keras.Sequential(
        [
            keras.Input(shape=(8, 8, 1)),
            keras.layers.Conv2D(conv_filters, 3, padding="same", activation="relu"),
            keras.layers.MaxPooling2D(),
            keras.layers.Conv2D(2 * conv_filters, 3, padding="same", activation="relu"),
            keras.layers.Flatten(),
            keras.layers.Dense(dense_units, activation="relu"),
            keras.layers.Dropout(dropout),
            keras.layers.Dense(10, activation="softmax"),
        ]
    )


class DigitsTrial(TFKerasTrial):
    def __init__(self, context: TFKerasTrialContext) -> None:
        super().__init__(context)
        self.context = context
        fraction = float(context.get_data_config().get("validation_fraction", 0.2))
        self.train, self.validation = data.load(fraction)

    def build_model(self) -> keras.Model:
        hp = self.context.get_hparam
        model = self.context.wrap_model(
            network(hp("conv_filters"), hp("dense_units"), hp("dropout"))
        )
        optimizer = self.context.wrap_optimizer(
            keras.optimizers.Adam(learning_rate=hp("learning_rate"))
        )
        model.compile(
            optimizer=optimizer,
            loss="sparse_categorical_crossentropy",
            metrics=["accuracy", ParameterCount(model.count_params())],
        )
        return model

    def build_training_data_loader(self) -> Any:
        return self.train

    def build_validation_data_loader(self) -> Any:
        return self.validation
