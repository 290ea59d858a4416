"""Iris with a premade estimator (``tf.estimator.LinearClassifier``): an EstimatorTrial.

Runs with TensorFlow 2.15 + tensorflow-estimator (``make .venv-estimator``); see the README's
EstimatorTrial section. The data (Fisher's iris, 150 rows, as scikit-learn ships it) is in
``iris.csv`` beside this file: every fifth row is for validation.
"""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path
from typing import Any

import numpy as np
import tensorflow as tf

from pedl.estimator import EstimatorTrial, EstimatorTrialContext

FEATURES = ["sepal_length", "sepal_width", "petal_length", "petal_width"]
DATA = Path(__file__).parent / "iris.csv"


def load_iris() -> tuple[dict[str, np.ndarray], np.ndarray, dict[str, np.ndarray], np.ndarray]:
    table = np.loadtxt(DATA, delimiter=",", skiprows=1, dtype=np.float32)
    validation = np.arange(len(table)) % 5 == 0
    train, val = table[~validation], table[validation]

    def split(rows: np.ndarray) -> tuple[dict[str, np.ndarray], np.ndarray]:
        return {name: rows[:, i] for i, name in enumerate(FEATURES)}, rows[:, 4].astype(np.int32)

    return (*split(train), *split(val))


class IrisTrial(EstimatorTrial):
    def __init__(self, context: EstimatorTrialContext) -> None:
        super().__init__(context)
        self.train_x, self.train_y, self.val_x, self.val_y = load_iris()

    def build_estimator(self) -> tf.estimator.Estimator:
        optimizer = self.context.wrap_optimizer(
            tf.keras.optimizers.legacy.Adam(self.context.get_hparam("learning_rate"))
        )
        return tf.estimator.LinearClassifier(
            feature_columns=[tf.feature_column.numeric_column(name) for name in FEATURES],
            n_classes=3,
            optimizer=optimizer,
        )

    def _input_fn(
        self, x: dict[str, np.ndarray], y: np.ndarray, shuffle: bool
    ) -> Callable[[], tf.data.Dataset]:
        def input_fn() -> tf.data.Dataset:
            dataset = self.context.wrap_dataset(tf.data.Dataset.from_tensor_slices((x, y)))
            if shuffle:
                dataset = dataset.shuffle(len(y), seed=self.context.get_trial_seed())
            return dataset.batch(self.context.get_per_slot_batch_size())

        return input_fn

    def build_train_spec(self) -> tf.estimator.TrainSpec:
        return tf.estimator.TrainSpec(self._input_fn(self.train_x, self.train_y, shuffle=True))

    def build_validation_spec(self) -> tf.estimator.EvalSpec:
        return tf.estimator.EvalSpec(
            self._input_fn(self.val_x, self.val_y, shuffle=False), steps=None
        )

    def build_serving_input_receiver_fns(self) -> dict[str, Callable[[], Any]]:
        def raw() -> tf.estimator.export.ServingInputReceiver:
            inputs = {name: tf.compat.v1.placeholder(tf.float32, [None], name) for name in FEATURES}
            return tf.estimator.export.ServingInputReceiver(inputs, inputs)

        spec = {name: tf.io.FixedLenFeature([], tf.float32) for name in FEATURES}
        return {
            "raw": raw,
            "parsing": tf.estimator.export.build_parsing_serving_input_receiver_fn(spec),
        }
