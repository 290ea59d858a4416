"""A model definition for the kill-and-resume tests.

``data.input`` in the experiment config picks the input kind (arrays, sequence, dataset).
``PEDL_TEST_KILL_AT_BATCH=n`` SIGKILLs the process after the trial's n-th batch (counted over
the whole trial, so a resumed process counts on from its checkpoint);
``PEDL_TEST_KILL_IN_CHECKPOINT=n`` SIGKILLs it while the n-th checkpoint this process writes is
being written; ``PEDL_TEST_WAIT_FOR_FILE=path`` makes an attempt that resumes from a checkpoint
wait, before its first batch, until that file exists (the test frees the disk meanwhile).
"""

import os
import signal
import time
from pathlib import Path
from typing import Any

import keras
import numpy as np
import tensorflow as tf

from pedl.keras import TFKerasTrial
from pedl.keras.callbacks import Callback


def blobs(n: int, seed: int) -> tuple[np.ndarray, np.ndarray]:
    rng = np.random.default_rng(seed)
    x = rng.normal(size=(n, 4)).astype("float32")
    return x, (x[:, 0] + x[:, 1] > 0).astype("int32")


class Batches(keras.utils.PyDataset):  # type: ignore[misc]
    def __init__(self, x: np.ndarray, y: np.ndarray, batch_size: int) -> None:
        super().__init__()
        self.x, self.y, self.batch_size = x, y, batch_size

    def __len__(self) -> int:
        return -(-len(self.x) // self.batch_size)

    def __getitem__(self, i: int) -> tuple[np.ndarray, np.ndarray]:
        s = slice(i * self.batch_size, (i + 1) * self.batch_size)
        return self.x[s], self.y[s]


class Killer(Callback):
    def __init__(self) -> None:
        super().__init__()
        self.batches = 0
        self.checkpoints = 0
        self.kill_at = int(os.environ.get("PEDL_TEST_KILL_AT_BATCH", "0"))
        self.kill_in_checkpoint = int(os.environ.get("PEDL_TEST_KILL_IN_CHECKPOINT", "0"))
        self.wait_for = os.environ.get("PEDL_TEST_WAIT_FOR_FILE", "")
        self.started = False

    def on_train_workload_begin(
        self, total_batches_trained: int, batches_requested: int | None, logs: Any
    ) -> None:
        if not self.started and total_batches_trained > 0 and self.wait_for:
            while not Path(self.wait_for).exists():
                time.sleep(0.05)
        self.started = True
        self.batches = total_batches_trained

    def on_train_batch_end(self, batch: int, logs: Any = None) -> None:
        self.batches += 1
        if self.batches == self.kill_at:
            os.kill(os.getpid(), signal.SIGKILL)

    def on_checkpoint_end(self, checkpoint_dir: str) -> None:
        self.checkpoints += 1
        if self.checkpoints == self.kill_in_checkpoint:
            os.kill(os.getpid(), signal.SIGKILL)


class ResumeTrial(TFKerasTrial):
    def build_model(self) -> keras.Model:
        model = self.context.wrap_model(
            keras.Sequential(
                [
                    keras.Input((4,)),
                    keras.layers.Dense(16, activation="relu"),
                    keras.layers.Dropout(0.3),
                    keras.layers.Dense(2, activation="softmax"),
                ]
            )
        )
        model.compile(
            optimizer=self.context.wrap_optimizer(keras.optimizers.Adam(0.01)),
            loss="sparse_categorical_crossentropy",
            metrics=["accuracy"],
        )
        return model

    def _data(self, n: int, seed: int, shuffle: bool) -> Any:
        kind = self.context.get_data_config()["input"]
        x, y = blobs(n, seed)
        batch_size = self.context.get_per_slot_batch_size()
        if kind == "arrays":
            return x, y
        if kind == "sequence":
            return Batches(x, y, batch_size)
        ds = tf.data.Dataset.from_tensor_slices((x, y))
        if shuffle:
            ds = ds.shuffle(50, seed=3)
        return self.context.wrap_dataset(ds.batch(batch_size))

    def build_training_data_loader(self) -> Any:
        return self._data(100, 0, shuffle=True)

    def build_validation_data_loader(self) -> Any:
        return self._data(40, 1, shuffle=False)

    def keras_callbacks(self) -> list[Any]:
        return [Killer()]
