"""Digits in the style of Determined's 0.2x TF-Keras API.

``TFKerasTrialContext``, ``context.configure_fit``, ``context.get_data_config()``; the
training dataset transformed after ``context.wrap_dataset`` (``.shuffle(seed=)``, ``.batch``,
``.map``, ``.prefetch``); validation as ``(x, y)`` arrays; a stateful
``determined.keras.callbacks.Callback``.
"""

from typing import Any

import tensorflow as tf
from determined import keras
from sklearn.datasets import load_digits


def load_data():
    x, y = load_digits(return_X_y=True)
    x = x.astype("float32")
    y = y.astype("int32")
    return (x[:1200], y[:1200]), (x[1200:1500], y[1200:1500])


def scale(x, y):
    return x / 16.0, y


class CountValidations(keras.callbacks.Callback):
    def __init__(self) -> None:
        super().__init__()
        self.validations = 0

    def on_test_end(self, logs=None) -> None:
        self.validations += 1

    def get_state(self) -> Any:
        return self.validations

    def load_state(self, state: Any) -> None:
        self.validations = state


class DigitsTrial(keras.TFKerasTrial):
    def __init__(self, context: keras.TFKerasTrialContext) -> None:
        self.context = context
        self.context.configure_fit(verbose=False)
        self.data_config = context.get_data_config()
        self.train, self.validation = load_data()

    def build_model(self) -> tf.keras.Model:
        model = self.context.wrap_model(
            tf.keras.Sequential(
                [
                    tf.keras.Input((64,)),
                    tf.keras.layers.Dense(self.context.get_hparam("hidden"), activation="relu"),
                    tf.keras.layers.Dense(10, activation="softmax"),
                ]
            )
        )
        optimizer = self.context.wrap_optimizer(
            tf.keras.optimizers.SGD(learning_rate=self.context.get_hparam("lr"), momentum=0.9)
        )
        model.compile(optimizer, "sparse_categorical_crossentropy", metrics=["accuracy"])
        return model

    def build_training_data_loader(self):
        dataset = self.context.wrap_dataset(tf.data.Dataset.from_tensor_slices(self.train))
        dataset = dataset.shuffle(self.data_config["shuffle_buffer"], seed=3)
        dataset = dataset.batch(self.context.get_per_slot_batch_size())
        return dataset.map(scale).prefetch(2)

    def build_validation_data_loader(self):
        x, y = self.validation
        return x / 16.0, y

    def keras_callbacks(self):
        return [CountValidations()]
