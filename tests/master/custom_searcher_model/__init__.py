"""A tiny model definition whose search is custom (``search.py``), for the end-to-end tests of
custom searchers (real master, real trial and searcher processes).

``PEDL_TEST_SLEEP`` (an experiment environment variable): seconds to sleep after each batch.
"""

import os
import time
from typing import Any

import keras
import numpy as np

from pedl.keras import TFKerasTrial

from .search import RandomSearchMethod  # the searcher found by default

__all__ = ["RandomSearchMethod", "TinyTrial"]


def blobs(n: int, seed: int) -> tuple[np.ndarray, np.ndarray]:
    rng = np.random.default_rng(seed)
    x = rng.normal(size=(n, 4)).astype("float32")
    return x, (x[:, 0] + x[:, 1] > 0).astype("int32")


class Slow(keras.callbacks.Callback):
    def on_train_batch_end(self, batch: int, logs: Any = None) -> None:
        time.sleep(float(os.environ.get("PEDL_TEST_SLEEP", "0")))


class TinyTrial(TFKerasTrial):
    def build_model(self) -> keras.Model:
        model = self.context.wrap_model(
            keras.Sequential(
                [
                    keras.Input((4,)),
                    keras.layers.Dense(8, activation="relu"),
                    keras.layers.Dense(2, activation="softmax"),
                ]
            )
        )
        model.compile(
            optimizer=self.context.wrap_optimizer(
                keras.optimizers.Adam(float(self.context.get_hparam("lr")))
            ),
            loss="sparse_categorical_crossentropy",
            metrics=["accuracy"],
        )
        return model

    def build_training_data_loader(self) -> Any:
        return blobs(96, 0)

    def build_validation_data_loader(self) -> Any:
        return blobs(32, 1)

    def keras_callbacks(self) -> list[Any]:
        return [Slow()]
