"""A tiny Keras trial for the model registry's end-to-end test.

Each checkpoint it writes also holds ``predictions.npy``: the trained model's predictions,
in the trial process, on a fixed input (``PROBE``), so a test can check that the model loaded
from the checkpoint predicts the same. After its first checkpoint the trial waits (up to two
minutes) for the file ``PEDL_TEST_GATE`` names, so the test can act while it runs.
"""

import os
import time
from pathlib import Path
from typing import Any

import keras
import numpy as np

from pedl.keras import TFKerasTrial
from pedl.keras.callbacks import Callback

PROBE = np.linspace(-2.0, 2.0, 40, dtype="float32").reshape(10, 4)


def blobs(n: int, seed: int) -> tuple[np.ndarray, np.ndarray]:
    rng = np.random.default_rng(seed)
    x = rng.normal(size=(n, 4)).astype("float32")
    return x, (x[:, 0] + x[:, 1] > 0).astype("int32")


class PredictAndWait(Callback):
    def __init__(self) -> None:
        super().__init__()
        self.checkpoints = 0
        self.gate = Path(os.environ["PEDL_TEST_GATE"])

    def on_checkpoint_end(self, checkpoint_dir: str) -> None:
        self.checkpoints += 1
        np.save(Path(checkpoint_dir) / "predictions.npy", self.model.predict(PROBE, verbose=0))

    def on_train_batch_end(self, batch: int, logs: Any = None) -> None:
        deadline = time.monotonic() + 120
        while self.checkpoints >= 1 and not self.gate.exists() and time.monotonic() < deadline:
            time.sleep(0.05)


class GatedTrial(TFKerasTrial):
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
            optimizer=self.context.wrap_optimizer(keras.optimizers.Adam(0.05)),
            loss="sparse_categorical_crossentropy",
            metrics=["accuracy"],
        )
        return model

    def build_training_data_loader(self) -> Any:
        return blobs(64, 0)

    def build_validation_data_loader(self) -> Any:
        return blobs(16, 1)

    def keras_callbacks(self) -> list[Any]:
        return [PredictAndWait()]
