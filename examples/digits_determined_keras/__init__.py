"""Digits written against Determined's TF-Keras API, run by PEDL unchanged.

It imports ``determined`` (PEDL's compatibility package: ``pip install 'pedl[determined]'``,
or ``pip install -e compat/determined`` in a source checkout) and uses the 0.2x API: a
``TFKerasTrialContext``, ``configure_fit``, a ``tf.data`` pipeline transformed after
``wrap_dataset``, ``determined.keras.callbacks``.
"""

import tensorflow as tf
from determined import keras
from sklearn.datasets import load_digits


def load_data(validation_fraction):
    x, y = load_digits(return_X_y=True)
    x = (x / 16.0).astype("float32")
    y = y.astype("int32")
    n_val = round(len(x) * validation_fraction)
    return (x[n_val:], y[n_val:]), (x[:n_val], y[:n_val])


class DigitsTrial(keras.TFKerasTrial):
    def __init__(self, context: keras.TFKerasTrialContext) -> None:
        self.context = context
        self.context.configure_fit(verbose=True)
        data = context.get_data_config()
        self.train, self.validation = load_data(data["validation_fraction"])

    def build_model(self) -> tf.keras.Model:
        model = self.context.wrap_model(
            tf.keras.Sequential(
                [
                    tf.keras.Input((64,)),
                    tf.keras.layers.Dense(self.context.get_hparam("hidden"), activation="relu"),
                    tf.keras.layers.Dropout(self.context.get_hparam("dropout")),
                    tf.keras.layers.Dense(10, activation="softmax"),
                ]
            )
        )
        optimizer = self.context.wrap_optimizer(
            tf.keras.optimizers.Adam(learning_rate=self.context.get_hparam("learning_rate"))
        )
        model.compile(optimizer, "sparse_categorical_crossentropy", metrics=["accuracy"])
        return model

    def build_training_data_loader(self):
        dataset = self.context.wrap_dataset(tf.data.Dataset.from_tensor_slices(self.train))
        dataset = dataset.shuffle(len(self.train[0]), seed=self.context.get_trial_seed())
        return dataset.batch(self.context.get_per_slot_batch_size()).prefetch(2)

    def build_validation_data_loader(self):
        dataset = self.context.wrap_dataset(tf.data.Dataset.from_tensor_slices(self.validation))
        return dataset.batch(self.context.get_per_slot_batch_size())

    def keras_callbacks(self):
        return [
            keras.callbacks.TensorBoard(update_freq="epoch"),
            keras.callbacks.EarlyStopping(monitor="val_accuracy", patience=3),
        ]
