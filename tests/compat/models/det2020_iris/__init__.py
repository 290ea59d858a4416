"""Iris in Determined's first context API (early 2020).

``determined.keras.TFKerasTrial(context)``, ``context.get_hparam``, the training data as an
``InMemorySequence(data=, labels=, batch_size=)`` inside ``KerasDataAdapter(data=...)``, a
validation ``tf.data.Dataset`` batched after ``context.wrap_dataset``.
"""

import determined as det
import numpy as np
import tensorflow as tf
from determined import keras
from sklearn.datasets import load_iris


def load_data():
    x, y = load_iris(return_X_y=True)
    order = np.random.default_rng(0).permutation(len(x))
    x = ((x - x.mean(0)) / x.std(0)).astype("float32")[order]
    y = y.astype("int32")[order]
    return (x[:120], y[:120]), (x[120:], y[120:])


class IrisTrial(keras.TFKerasTrial):
    def __init__(self, context: det.TrialContext) -> None:
        self.context = context
        self.train, self.validation = load_data()

    def build_model(self):
        model = tf.keras.Sequential(
            [
                tf.keras.Input((4,)),
                tf.keras.layers.Dense(16, activation="relu"),
                tf.keras.layers.Dense(3, activation="softmax"),
            ]
        )
        model = self.context.wrap_model(model)
        model.compile(
            optimizer=tf.keras.optimizers.Adam(learning_rate=self.context.get_hparam("lr")),
            loss="sparse_categorical_crossentropy",
            metrics=["accuracy"],
        )
        return model

    def build_training_data_loader(self):
        x, y = self.train
        sequence = keras.InMemorySequence(
            data=x, labels=y, batch_size=self.context.get_per_slot_batch_size()
        )
        return keras.KerasDataAdapter(data=sequence, workers=0)

    def build_validation_data_loader(self):
        dataset = self.context.wrap_dataset(tf.data.Dataset.from_tensor_slices(self.validation))
        return dataset.batch(self.context.get_per_slot_batch_size())
