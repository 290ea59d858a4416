"""The PEDL 0.x form for the master tests. ``PEDL_TEST_KILL_AT_BATCH=n`` SIGKILLs the process
after its n-th batch, once (while the file ``PEDL_TEST_MARKER`` names does not exist)."""

import os
import signal

import keras
import numpy as np
import tensorflow as tf

import pedl.callback
from pedl.frameworks.keras import TFKerasTrial, wrap_dataset


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


def make_data_loaders(experiment_config, hparams):
    rng = np.random.default_rng(0)
    x = rng.normal(size=(96, 4)).astype("float32")
    y = (x[:, 0] + x[:, 1] > 0).astype("int32")
    batch = hparams["global_batch_size"]
    train = wrap_dataset(tf.data.Dataset.from_tensor_slices((x, y))).shuffle(96, seed=1)
    return train.batch(batch), (x[:32], y[:32])


class StepCount(pedl.callback.Callback):
    def on_train_step_end(self, step_id, metrics):
        assert len(metrics) >= 1


class LegacyTrial(TFKerasTrial):
    def build_model(self, hparams):
        model = keras.Sequential(
            [
                keras.Input((4,)),
                keras.layers.Dense(8, activation="relu"),
                keras.layers.Dropout(0.2),
                keras.layers.Dense(2, activation="softmax"),
            ]
        )
        model.compile(
            keras.optimizers.Adam(0.02), "sparse_categorical_crossentropy", metrics=["accuracy"]
        )
        return model

    def keras_callbacks(self, hparams):
        return [Killer()]

    def callbacks(self, hparams):
        return [StepCount()]
