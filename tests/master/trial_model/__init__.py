"""A tiny model definition for the master's end-to-end tests (real trial processes).

Driven by environment variables (set through the experiment config's
``environment.environment_variables``):

- ``PEDL_TEST_SLEEP``: seconds to sleep after each batch (slows training, not its numbers);
- ``PEDL_TEST_KILL_AT`` and ``PEDL_TEST_MARKER``: SIGKILL the process after its n-th batch,
  once (the marker file records that it happened);

and by the hyperparameter ``fail_in_build`` (``build_model`` raises).
"""

import os
import signal
import time
from pathlib import Path
from typing import Any

import keras
import numpy as np

from pedl.keras import TFKerasTrial


def blobs(n: int, seed: int) -> tuple[np.ndarray, np.ndarray]:
    rng = np.random.default_rng(seed)
    x = rng.normal(size=(n, 4)).astype("float32")
    return x, (x[:, 0] + x[:, 1] > 0).astype("int32")


class Chaos(keras.callbacks.Callback):
    def __init__(self) -> None:
        super().__init__()
        self.batches = 0
        self.sleep = float(os.environ.get("PEDL_TEST_SLEEP", "0"))
        self.kill_at = int(os.environ.get("PEDL_TEST_KILL_AT", "0"))
        self.marker = os.environ.get("PEDL_TEST_MARKER", "")

    def on_train_batch_end(self, batch: int, logs: Any = None) -> None:
        self.batches += 1
        if self.sleep:
            time.sleep(self.sleep)
        if self.kill_at and self.batches == self.kill_at and self.marker:
            marker = Path(self.marker)
            if not marker.exists():
                marker.write_text("killed")
                os.kill(os.getpid(), signal.SIGKILL)


class TinyTrial(TFKerasTrial):
    def build_model(self) -> keras.Model:
        if self.context.get_hparams().get("fail_in_build"):
            raise RuntimeError("build_model failed on purpose")
        model = self.context.wrap_model(
            keras.Sequential(
                [
                    keras.Input((4,)),
                    keras.layers.Dense(8, activation="relu"),
                    keras.layers.Dropout(0.2),
                    keras.layers.Dense(2, activation="softmax"),
                ]
            )
        )
        lr = float(self.context.get_hparam("lr"))
        model.compile(
            optimizer=self.context.wrap_optimizer(keras.optimizers.Adam(lr)),
            loss="sparse_categorical_crossentropy",
            metrics=["accuracy"],
        )
        return model

    def build_training_data_loader(self) -> Any:
        return blobs(96, 0)

    def build_validation_data_loader(self) -> Any:
        return blobs(32, 1)

    def keras_callbacks(self) -> list[Any]:
        return [Chaos()]
