"""The model definition: ``make_data_loaders`` and the TensorFlowTrial."""

from __future__ import annotations

from typing import Any

import numpy as np
import tensorflow as tf
from sklearn.datasets import load_digits

from pedl.frameworks.tensorflow import TensorFlowTrial


def make_data_loaders(experiment_config: dict[str, Any], hparams: dict[str, Any]) -> Any:
    """Batched (training, validation) datasets of the 8x8 digit images, flattened."""
    digits = load_digits()
    x = (digits.data / 16.0).astype("float32")
    y = digits.target.astype("int64")
    order = np.random.default_rng(0).permutation(len(x))
    n_val = round(len(x) * experiment_config["data"].get("validation_fraction", 0.2))
    val, train = order[:n_val], order[n_val:]
    batch_size = hparams["global_batch_size"]
    training = (
        tf.data.Dataset.from_tensor_slices((x[train], y[train]))
        .shuffle(len(train))
        .batch(batch_size)
    )
    validation = tf.data.Dataset.from_tensor_slices((x[val], y[val])).batch(batch_size)
    return training, validation


def _dense(x: tf.Tensor, units: int, name: str) -> tf.Tensor:
    kernel = tf.compat.v1.get_variable(
        f"{name}/kernel",
        [x.shape[-1], units],
        initializer=tf.compat.v1.glorot_uniform_initializer(),
    )
    bias = tf.compat.v1.get_variable(f"{name}/bias", [units], initializer=tf.zeros_initializer())
    return tf.matmul(x, kernel) + bias


class DigitsTrial(TensorFlowTrial):
    def optimizer(self) -> tf.compat.v1.train.Optimizer:
        return tf.compat.v1.train.MomentumOptimizer(self.hparams["learning_rate"], momentum=0.9)

    def build_graph(self, record: Any, is_training: tf.Tensor) -> dict[str, tf.Tensor]:
        images, labels = record
        hidden = tf.nn.relu(_dense(images, self.hparams["hidden_units"], "hidden"))
        logits = _dense(hidden, 10, "logits")
        loss = tf.reduce_mean(
            tf.nn.sparse_softmax_cross_entropy_with_logits(labels=labels, logits=logits)
        )
        correct = tf.equal(tf.argmax(logits, axis=1), labels)
        accuracy = tf.reduce_mean(tf.cast(correct, tf.float32))
        return {"loss": loss, "accuracy": accuracy}

    def training_metrics(self) -> list[str]:
        return ["accuracy"]

    def validation_metrics(self) -> list[str]:
        return ["accuracy", "loss"]
