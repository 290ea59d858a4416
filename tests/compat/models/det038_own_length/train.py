"""A Determined 0.38 script that decides its own length and batch size: ``fit(batch_size=30,
epochs=2)``, no ``searcher.max_length`` and no ``global_batch_size`` hyperparameter in its
config, its searcher metric named as 0.38's ``DeterminedCallback`` reports it
(``categorical_accuracy``, no ``val_`` prefix)."""

import determined as det
import determined.keras
import keras
import numpy as np


def load_data():
    from sklearn.datasets import load_iris

    x, y = load_iris(return_X_y=True)
    order = np.random.default_rng(0).permutation(len(x))
    x = ((x - x.mean(0)) / x.std(0)).astype("float32")[order]
    y = keras.utils.to_categorical(y[order], 3)
    return (x[:120], y[:120]), (x[120:], y[120:])


if __name__ == "__main__":
    info = det.get_cluster_info()
    assert info is not None
    hparams = info.trial.hparams
    (train_x, train_y), validation = load_data()
    model = keras.Sequential(
        [
            keras.Input((4,)),
            keras.layers.Dense(hparams["layer1_dense_size"], activation="relu"),
            keras.layers.Dense(3, activation="softmax"),
        ]
    )
    model.compile(
        keras.optimizers.RMSprop(hparams["learning_rate"]),
        "categorical_crossentropy",
        metrics=["categorical_accuracy"],
    )
    with det.core.init() as core_context:
        model.fit(
            train_x,
            train_y,
            batch_size=30,
            epochs=2,
            validation_data=validation,
            callbacks=[
                det.keras.DeterminedCallback(
                    core_context, checkpoint=info.latest_checkpoint, continue_id=info.trial.trial_id
                )
            ],
        )
