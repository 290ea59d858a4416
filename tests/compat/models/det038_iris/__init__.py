"""Iris in the style of Determined 0.38's TFKerasTrial (Keras 3 imports).

A metric that needs concrete values (NumPy, ``run_eagerly=True``): built ahead of time
through Keras' symbolic tracing it fails; PEDL builds it on a real batch. Training arrays in
order (``configure_fit(shuffle=False)``), a ``determined.keras.callbacks.EarlyStopping``.
"""

import determined as det
import determined.keras
import keras
import numpy as np
from sklearn.datasets import load_iris


def load_data():
    x, y = load_iris(return_X_y=True)
    order = np.random.default_rng(0).permutation(len(x))
    x = ((x - x.mean(0)) / x.std(0)).astype("float32")[order]
    y = y.astype("int32")[order]
    return (x[:120], y[:120]), (x[120:], y[120:])


class NumpyAccuracy(keras.metrics.Metric):
    """Accuracy computed with NumPy: it needs real values, not symbolic tensors."""

    def __init__(self, name: str = "np_accuracy") -> None:
        super().__init__(name=name)
        self.correct = self.add_variable(shape=(), initializer="zeros", name="correct")
        self.seen = self.add_variable(shape=(), initializer="zeros", name="seen")

    def update_state(self, y_true, y_pred, sample_weight=None):
        labels = np.asarray(y_true).reshape(-1)
        predicted = np.asarray(y_pred).argmax(-1)
        self.correct.assign_add(float((labels == predicted).sum()))
        self.seen.assign_add(float(len(labels)))

    def result(self):
        return self.correct / keras.ops.maximum(self.seen, 1.0)


class IrisTrial(det.keras.TFKerasTrial):
    def __init__(self, context: det.keras.TFKerasTrialContext) -> None:
        super().__init__(context)
        context.configure_fit(shuffle=False)
        self.train, self.validation = load_data()

    def build_model(self) -> keras.Model:
        model = self.context.wrap_model(
            keras.Sequential(
                [
                    keras.Input((4,)),
                    keras.layers.Dense(16, activation="relu"),
                    keras.layers.Dense(3, activation="softmax"),
                ]
            )
        )
        model.compile(
            optimizer=self.context.wrap_optimizer(
                keras.optimizers.Adam(self.context.get_hparam("lr"))
            ),
            loss="sparse_categorical_crossentropy",
            metrics=["accuracy", NumpyAccuracy()],
            run_eagerly=True,
        )
        return model

    def build_training_data_loader(self):
        return self.train

    def build_validation_data_loader(self):
        return self.validation

    def keras_callbacks(self):
        return [det.keras.callbacks.EarlyStopping(monitor="val_loss", patience=100)]
