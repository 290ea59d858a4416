"""Iris in the style of Determined's InputData/adapter years (0.13 to 0.16).

Return types ``keras.InputData``; ``context.env`` (``experiment_config``, ``hparams``,
``trial_seed``); the training data from ``context.experimental.cache_train_dataset``
, batched after caching; validation through
``keras.ArrayLikeAdapter``; ``keras.TFKerasTensorBoard``; a learning rate written ``5e-2`` in
the YAML (a float in YAML 1.2).
"""

import logging

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
    def __init__(self, context: keras.TFKerasTrialContext) -> None:
        self.context = context
        env = context.env
        assert isinstance(env.experiment_config, dict)
        assert env.experiment_config.get_records_per_epoch() == 120
        logging.info("trial seed %d, data %s", env.trial_seed, env.experiment_config["data"])
        self.lr = env.hparams["learning_rate"]
        self.train, self.validation = load_data()

    def build_model(self) -> tf.keras.Model:
        model = tf.keras.Sequential(
            [
                tf.keras.Input((4,)),
                tf.keras.layers.Dense(16, activation="relu"),
                tf.keras.layers.Dense(3, activation="softmax"),
            ]
        )
        model = self.context.wrap_model(model)
        optimizer = self.context.wrap_optimizer(tf.keras.optimizers.Adam(learning_rate=self.lr))
        model.compile(optimizer, "sparse_categorical_crossentropy", metrics=["accuracy"])
        return model

    def build_training_data_loader(self) -> keras.InputData:
        @self.context.experimental.cache_train_dataset("iris", "v1")
        def make_dataset():
            return tf.data.Dataset.from_tensor_slices(self.train)

        return make_dataset().batch(self.context.get_per_slot_batch_size())

    def build_validation_data_loader(self) -> keras.InputData:
        x, y = self.validation
        return keras.ArrayLikeAdapter(x, y, batch_size=self.context.get_per_slot_batch_size())

    def keras_callbacks(self):
        return [keras.TFKerasTensorBoard(update_freq="epoch")]


assert det.InvalidHP is not None
