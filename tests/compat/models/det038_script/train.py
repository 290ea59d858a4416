"""Iris in the style of Determined 0.38's Keras script (its ``iris_tf_keras`` example's shape):
``det.get_cluster_info()``, ``det.core.init()``, ``det.keras.DeterminedCallback`` and
``det.keras.TensorBoard``, run as ``entrypoint: python3 train.py``. Arrays in order
(``shuffle=False``) so that plain Keras ``fit`` gives the same batches."""

import argparse

import determined as det
import determined.keras
import keras
import numpy as np
import tensorflow as tf


def load_data() -> tuple[tuple[np.ndarray, np.ndarray], tuple[np.ndarray, np.ndarray]]:
    from sklearn.datasets import load_iris

    x, y = load_iris(return_X_y=True)
    order = np.random.default_rng(0).permutation(len(x))
    x = ((x - x.mean(0)) / x.std(0)).astype("float32")[order]
    y = keras.utils.to_categorical(y[order], 3)
    return (x[:120], y[:120]), (x[120:], y[120:])


def build_model(hparams: dict) -> keras.Model:
    model = keras.Sequential(
        [
            keras.Input((4,)),
            keras.layers.Dense(hparams["layer1_dense_size"], activation="relu"),
            keras.layers.Dense(3, activation="softmax"),
        ]
    )
    model.compile(
        keras.optimizers.RMSprop(hparams["learning_rate"]),
        keras.losses.categorical_crossentropy,
        metrics=[keras.metrics.categorical_accuracy],
    )
    return model


def main(core_context, strategy, checkpoint, continue_id, hparams, epochs) -> None:
    (train_x, train_y), validation = load_data()
    with strategy.scope():
        model = build_model(hparams)
    model.fit(
        x=train_x,
        y=train_y,
        batch_size=hparams["global_batch_size"],
        validation_data=validation,
        epochs=epochs,
        shuffle=False,
        callbacks=[
            det.keras.DeterminedCallback(
                core_context, checkpoint=checkpoint, continue_id=continue_id, checkpoint_epochs=1
            ),
            det.keras.TensorBoard(core_context, update_freq="epoch", profile_batch=0),
        ],
    )


if __name__ == "__main__":
    parser = argparse.ArgumentParser()
    parser.add_argument("--epochs", type=int, default=100)
    args = parser.parse_args()
    info = det.get_cluster_info()
    assert info is not None, "this example only runs on the cluster"
    with det.core.init(distributed=None) as core_context:
        main(
            core_context,
            tf.distribute.get_strategy(),
            info.latest_checkpoint,
            info.trial.trial_id,
            info.trial.hparams,
            args.epochs,
        )
