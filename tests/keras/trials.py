"""Tiny trials used across the Keras tests."""

from __future__ import annotations

from typing import Any

import numpy as np
import tensorflow as tf

from pedl.keras import TFKerasTrial
from pedl.keras._keras import PyDataset, keras


def blobs(n: int, seed: int) -> tuple[np.ndarray, np.ndarray]:
    rng = np.random.default_rng(seed)
    x = rng.normal(size=(n, 4)).astype("float32")
    y = (x[:, 0] + x[:, 1] > 0).astype("int32")
    return x, y


class ArraySequence(PyDataset):  # type: ignore[misc]
    def __init__(self, x: np.ndarray, y: np.ndarray, batch_size: int, **kwargs: Any) -> None:
        super().__init__(**kwargs)
        self.x, self.y, self.batch_size = x, y, batch_size

    def __len__(self) -> int:
        return -(-len(self.x) // self.batch_size)

    def __getitem__(self, i: int) -> tuple[np.ndarray, np.ndarray]:
        s = slice(i * self.batch_size, (i + 1) * self.batch_size)
        return self.x[s], self.y[s]


class SmallTrial(TFKerasTrial):
    """A dense net with dropout (seed-generator state) on separable blobs; arrays by default."""

    input_kind = "arrays"

    def layers(self) -> list[Any]:
        return [
            keras.Input((4,)),
            keras.layers.Dense(8, activation="relu"),
            keras.layers.Dropout(0.3),
            keras.layers.Dense(2, activation="softmax"),
        ]

    def build_model(self) -> keras.Model:
        model = self.context.wrap_model(keras.Sequential(self.layers()))
        model.compile(
            optimizer=self.context.wrap_optimizer(keras.optimizers.Adam(0.02)),
            loss="sparse_categorical_crossentropy",
            metrics=["accuracy"],
        )
        return model

    def build_training_data_loader(self) -> Any:
        return self._data(*blobs(100, 0), shuffle=True)

    def build_validation_data_loader(self) -> Any:
        return self._data(*blobs(40, 1), shuffle=False)

    def _data(self, x: np.ndarray, y: np.ndarray, shuffle: bool) -> Any:
        batch = self.context.get_per_slot_batch_size()
        if self.input_kind == "arrays":
            return x, y
        if self.input_kind == "sequence":
            return ArraySequence(x, y, batch)
        ds = tf.data.Dataset.from_tensor_slices((x, y))
        if shuffle:
            ds = ds.shuffle(64, seed=5)
        return self.context.wrap_dataset(ds.batch(batch))


class RankSeededTrial(SmallTrial):
    """SmallTrial whose initial weights each worker draws from its own rank: the trial's
    code drawing numbers of its own, so that the workers' copies start apart."""

    seed_from_rank = True

    def build_model(self) -> keras.Model:
        model = super().build_model()
        seed = self.context.distributed.get_rank() if self.seed_from_rank else 0
        rng = np.random.default_rng(seed)
        model.set_weights([rng.normal(size=w.shape).astype(w.dtype) for w in model.get_weights()])
        return model


class ChiefSeededTrial(RankSeededTrial):
    """RankSeededTrial whose every worker draws the chief's initial weights."""

    seed_from_rank = False


class NormalizedTrial(SmallTrial):
    """SmallTrial with a batch normalization: moving statistics that each worker's own
    half of the batch moves."""

    def layers(self) -> list[Any]:
        first, dense, *rest = super().layers()
        return [first, dense, keras.layers.BatchNormalization(), *rest]
