"""A tiny TFKerasTrial for local multi-worker runs: a dense net with dropout on separable
blobs (as tests/keras/multiworker_model), each batch at least ``step_seconds`` long; at the
end of each attempt's training every worker saves its weights, rank and process id to
``{out}/trial-{id}-rank-{rank}.npz``, so a test can compare the workers' final weights, with
the ``tf.distribute`` strategy the model was built under."""

import os
import time
from pathlib import Path

import keras
import numpy as np
import tensorflow as tf

from pedl.keras import TFKerasTrial


def blobs(n, seed):
    rng = np.random.default_rng(seed)
    x = rng.normal(size=(n, 4)).astype("float32")
    return x, (x[:, 0] + x[:, 1] > 0).astype("int32")


class Record(keras.callbacks.Callback):
    def __init__(self, context, strategy):
        super().__init__()
        self.context = context
        self.strategy = strategy

    def on_train_batch_end(self, batch, logs=None):
        time.sleep(self.context.get_hparam("step_seconds"))

    def on_train_end(self, logs=None):
        rank = self.context.distributed.get_rank()
        path = Path(self.context.get_hparam("out"))
        path.mkdir(parents=True, exist_ok=True)
        name = f"trial-{self.context.get_trial_id()}-rank-{rank}.npz"
        weights = {f"w{i}": w for i, w in enumerate(self.model.get_weights())}
        np.savez(path / name, pid=os.getpid(), strategy=self.strategy, **weights)
        # The chief exits only once every worker has written its file: the others are stopped
        # a few seconds after the chief exits, which a loaded machine can reach mid-write.
        self.context.distributed.allgather(rank)


class BlobsTrial(TFKerasTrial):
    def build_model(self):
        self.strategy = type(tf.distribute.get_strategy()).__name__
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
            optimizer=self.context.wrap_optimizer(
                keras.optimizers.Adam(self.context.get_hparam("learning_rate"))
            ),
            loss="sparse_categorical_crossentropy",
            metrics=["accuracy"],
        )
        return model

    def build_training_data_loader(self):
        return blobs(200, 0)

    def build_validation_data_loader(self):
        return blobs(40, 1)

    def keras_callbacks(self):
        return [Record(self.context, self.strategy)]
