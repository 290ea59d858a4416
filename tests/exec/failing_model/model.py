"""A model definition that fails where its hyperparameters say, for the run_attempt tests.

``fail`` names the place: ``init``, ``build_model``, ``training_data``, ``loss`` (when
Keras traces it), ``first_batch`` or ``second_batch`` (that training batch begins) or
``after_checkpoint`` (the 8th batch begins, after the checkpoint at 5); ``error`` is what
is raised there: ``value`` (a ValueError) or ``invalid_hp`` (pedl.InvalidHP). Each raise
is on a line marked ``# fail: PLACE``. ``stop_at`` > 0 asks to stop early
(``set_stop_requested``) after that many batches.
"""

from typing import Any

import keras
import numpy as np

import pedl
from pedl.keras import TFKerasTrial, TFKerasTrialContext


def failure(hparams: dict[str, Any], place: str) -> Exception | None:
    """The exception to raise at ``place``, or None."""
    if hparams.get("fail") != place:
        return None
    if hparams.get("error") == "invalid_hp":
        return pedl.InvalidHP(f"{place}: these hyperparameters do not work")
    return ValueError(f"{place} failed on purpose")


def blobs(n: int, seed: int) -> tuple[np.ndarray, np.ndarray]:
    rng = np.random.default_rng(seed)
    x = rng.normal(size=(n, 4)).astype("float32")
    return x, (x[:, 0] + x[:, 1] > 0).astype("int32")


class Batches(keras.callbacks.Callback):  # type: ignore[misc]
    def __init__(self, context: TFKerasTrialContext) -> None:
        super().__init__()
        self.context = context
        self.hparams = context.get_hparams()
        self.batches = 0

    def on_train_batch_begin(self, batch: int, logs: Any = None) -> None:
        if self.batches == 0 and (error := failure(self.hparams, "first_batch")):
            raise error  # fail: first_batch
        if self.batches == 1 and (error := failure(self.hparams, "second_batch")):
            raise error  # fail: second_batch
        if self.batches == 7 and (error := failure(self.hparams, "after_checkpoint")):
            raise error  # fail: after_checkpoint

    def on_train_batch_end(self, batch: int, logs: Any = None) -> None:
        self.batches += 1
        if self.batches == self.hparams.get("stop_at"):
            self.context.set_stop_requested(True)


class FailingTrial(TFKerasTrial):
    def __init__(self, context: TFKerasTrialContext) -> None:
        super().__init__(context)
        self.hparams = context.get_hparams()
        if error := failure(self.hparams, "init"):
            raise error  # fail: init

    def build_model(self) -> keras.Model:
        if error := failure(self.hparams, "build_model"):
            raise error  # fail: build_model
        model = self.context.wrap_model(
            keras.Sequential(
                [
                    keras.Input((4,)),
                    keras.layers.Dense(8, activation="relu"),
                    keras.layers.Dense(2, activation="softmax"),
                ]
            )
        )
        hparams = self.hparams

        def loss(y_true: Any, y_pred: Any) -> Any:
            if error := failure(hparams, "loss"):
                raise error  # fail: loss
            return keras.losses.sparse_categorical_crossentropy(y_true, y_pred)

        model.compile(optimizer="adam", loss=loss, metrics=["accuracy"])
        return model

    def build_training_data_loader(self) -> Any:
        if error := failure(self.hparams, "training_data"):
            raise error  # fail: training_data
        return blobs(64, 0)

    def build_validation_data_loader(self) -> Any:
        return blobs(32, 1)

    def keras_callbacks(self) -> list[Any]:
        return [Batches(self.context)]
