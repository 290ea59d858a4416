"""Iris in the PEDL 0.x form (seeds 000 and 001).

``make_data_loaders(experiment_config, hparams)`` with ``pedl.frameworks.keras.wrap_dataset``,
``TFKerasTrial(hparams)`` with ``build_model(hparams)``, a ``KerasDataAdapter`` for validation,
``callbacks(hparams)``: a ``pedl.callback.Callback`` that records every call (to the file
``$EVENTS``, when set) and ``pedl.frameworks.tensorflow.TensorBoard(log_directory)``.
"""

import json
import os

import keras
import numpy as np
import tensorflow as tf
from sklearn.datasets import load_iris

import pedl.callback
from pedl.frameworks.keras import KerasDataAdapter, TFKerasTrial, wrap_dataset
from pedl.frameworks.tensorflow import TensorBoard


class ArraySequence(keras.utils.Sequence):
    def __init__(self, x, y, batch_size):
        super().__init__()
        self.x, self.y, self.batch_size = x, y, batch_size

    def __len__(self):
        return -(-len(self.x) // self.batch_size)

    def __getitem__(self, index):
        batch = slice(index * self.batch_size, (index + 1) * self.batch_size)
        return self.x[batch], self.y[batch]


def load_data():
    x, y = load_iris(return_X_y=True)
    order = np.random.default_rng(0).permutation(len(x))
    x = ((x - x.mean(0)) / x.std(0)).astype("float32")[order]
    y = y.astype("int32")[order]
    return (x[:120], y[:120]), (x[120:], y[120:])


def make_data_loaders(experiment_config, hparams):
    (x, y), (vx, vy) = load_data()
    batch_size = hparams["global_batch_size"]
    train = wrap_dataset(tf.data.Dataset.from_tensor_slices((x, y)))
    train = train.shuffle(120, seed=experiment_config["data"]["shuffle_seed"]).batch(batch_size)
    validation = KerasDataAdapter(ArraySequence(vx, vy, batch_size), workers=0)
    return train, validation


class Record(pedl.callback.Callback):
    def __init__(self, path):
        self.path = path

    def _log(self, *event):
        if self.path:
            with open(self.path, "a") as f:
                f.write(json.dumps(event) + "\n")

    def on_trial_begin(self):
        self._log("trial_begin")

    def on_train_step_begin(self, step_id):
        self._log("train_step_begin", step_id)

    def on_train_step_end(self, step_id, metrics):
        self._log("train_step_end", step_id, metrics)

    def on_validation_step_begin(self, step_id):
        self._log("validation_step_begin", step_id)

    def on_validation_step_end(self, step_id, metrics):
        self._log("validation_step_end", step_id, metrics)


class IrisTrial(TFKerasTrial):
    def build_model(self, hparams):
        model = keras.Sequential(
            [
                keras.Input((4,)),
                keras.layers.Dense(16, activation="relu"),
                keras.layers.Dense(3, activation="softmax"),
            ]
        )
        model.compile(
            keras.optimizers.Adam(hparams["lr"]),
            "sparse_categorical_crossentropy",
            metrics=["accuracy"],
        )
        return model

    def callbacks(self, hparams):
        callbacks = [Record(os.environ.get("EVENTS", ""))]
        if os.environ.get("TENSORBOARD_DIR"):
            callbacks.append(TensorBoard(os.environ["TENSORBOARD_DIR"]))
        return callbacks
