"""Iris in the PEDL 0.x form: ``make_data_loaders(experiment_config, hparams)`` and a
``TFKerasTrial(hparams)`` with ``build_model(hparams)``, step callbacks and PEDL 0.x's
TensorBoard callback."""

import keras
import numpy as np
import tensorflow as tf
from sklearn.datasets import load_iris

import pedl.callback
from pedl.frameworks.keras import TFKerasTrial, wrap_dataset
from pedl.frameworks.tensorflow import TensorBoard


def make_data_loaders(experiment_config, hparams):
    x, y = load_iris(return_X_y=True)
    order = np.random.default_rng(0).permutation(len(x))
    x = ((x - x.mean(0)) / x.std(0)).astype("float32")[order]
    y = y.astype("int32")[order]
    n_val = experiment_config["data"]["validation_records"]
    batch_size = hparams["global_batch_size"]
    train = wrap_dataset(tf.data.Dataset.from_tensor_slices((x[n_val:], y[n_val:])))
    train = train.shuffle(len(x) - n_val, seed=experiment_config["data"]["seed"])
    validation = wrap_dataset(tf.data.Dataset.from_tensor_slices((x[:n_val], y[:n_val])))
    return train.batch(batch_size), validation.batch(batch_size)


class PrintSteps(pedl.callback.Callback):
    """Logs each step's per-batch losses and each validation."""

    def on_train_step_end(self, step_id, metrics):
        losses = ", ".join(f"{m['loss']:.3f}" for m in metrics)
        print(f"step {step_id}: batch losses {losses}")

    def on_validation_step_end(self, step_id, metrics):
        print(f"validation after step {step_id}: {metrics}")


class IrisTrial(TFKerasTrial):
    def build_model(self, hparams):
        model = keras.Sequential(
            [
                keras.Input((4,)),
                keras.layers.Dense(hparams["hidden"], activation="relu"),
                keras.layers.Dense(3, activation="softmax"),
            ]
        )
        model.compile(
            keras.optimizers.Adam(hparams["learning_rate"]),
            "sparse_categorical_crossentropy",
            metrics=["accuracy"],
        )
        return model

    def callbacks(self, hparams):
        return [PrintSteps(), TensorBoard("/tmp/pedl-iris-tensorboard")]
