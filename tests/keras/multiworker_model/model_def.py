"""A tiny TFKerasTrial for multi-worker runs on a real master: a dense net with dropout on
separable blobs; each batch takes at least ``step_seconds`` (a Keras callback sleeps), so a
test can act on the trial at a chosen batch. ``tf.keras``: Keras 3, or Keras 2 where the
experiment sets ``TF_USE_LEGACY_KERAS=1``."""

import time

import numpy as np
from tensorflow import keras

from pedl.keras import TFKerasTrial


def blobs(n, seed):
    rng = np.random.default_rng(seed)
    x = rng.normal(size=(n, 4)).astype("float32")
    return x, (x[:, 0] + x[:, 1] > 0).astype("int32")


class Slow(keras.callbacks.Callback):
    def __init__(self, seconds):
        super().__init__()
        self.seconds = seconds

    def on_train_batch_end(self, batch, logs=None):
        time.sleep(self.seconds)


class BlobsTrial(TFKerasTrial):
    def build_model(self):
        model = self.context.wrap_model(
            keras.Sequential(
                [
                    keras.Input((4,)),
                    keras.layers.Dense(8, activation="relu"),
                    keras.layers.Dropout(0.3),
                    keras.layers.Dense(2, activation="softmax"),
                ]
            )
        )
        model.compile(
            optimizer=self.context.wrap_optimizer(keras.optimizers.Adam(0.02)),
            loss="sparse_categorical_crossentropy",
            metrics=["accuracy"],
        )
        return model

    def build_training_data_loader(self):
        return blobs(200, 0)

    def build_validation_data_loader(self):
        return blobs(40, 1)

    def keras_callbacks(self):
        return [Slow(self.context.get_hparam("step_seconds"))]
