"""A Determined-style TFKerasTrial (through the ``determined`` package) for the master tests.
``PEDL_TEST_KILL_AT_BATCH=n`` SIGKILLs the process after its n-th batch, once (while the
file ``PEDL_TEST_MARKER`` names does not exist)."""

import os
import signal

import numpy as np
import tensorflow as tf

import determined as det
from determined import keras


class Killer(keras.callbacks.Callback):
    def __init__(self):
        super().__init__()
        self.batches = 0

    def on_train_batch_end(self, batch, logs=None):
        self.batches += 1
        marker = os.environ.get("PEDL_TEST_MARKER", "")
        kill_at = int(os.environ.get("PEDL_TEST_KILL_AT_BATCH", "0"))
        if self.batches == kill_at and marker and not os.path.exists(marker):
            open(marker, "w").close()
            os.kill(os.getpid(), signal.SIGKILL)


class BlobsTrial(keras.TFKerasTrial):
    def __init__(self, context: det.TrialContext) -> None:
        self.context = context
        rng = np.random.default_rng(0)
        self.x = rng.normal(size=(96, 4)).astype("float32")
        self.y = (self.x[:, 0] + self.x[:, 1] > 0).astype("int32")

    def build_model(self):
        model = self.context.wrap_model(
            tf.keras.Sequential(
                [
                    tf.keras.Input((4,)),
                    tf.keras.layers.Dense(8, activation="relu"),
                    tf.keras.layers.Dropout(0.2),
                    tf.keras.layers.Dense(2, activation="softmax"),
                ]
            )
        )
        optimizer = self.context.wrap_optimizer(tf.keras.optimizers.Adam(0.02))
        model.compile(optimizer, "sparse_categorical_crossentropy", metrics=["accuracy"])
        return model

    def build_training_data_loader(self):
        dataset = self.context.wrap_dataset(tf.data.Dataset.from_tensor_slices((self.x, self.y)))
        return dataset.shuffle(96, seed=2).batch(self.context.get_per_slot_batch_size())

    def build_validation_data_loader(self):
        return keras.ArrayLikeAdapter(self.x[:32], self.y[:32], batch_size=16)

    def keras_callbacks(self):
        return [Killer()]
