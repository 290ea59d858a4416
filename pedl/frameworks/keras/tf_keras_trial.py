"""``pedl.frameworks.keras.tf_keras_trial.TFKerasTrial``: the PEDL 0.x tf.keras trial."""

from __future__ import annotations

import abc
from typing import Any, ClassVar

import tensorflow as tf

from pedl._trial import Trial
from pedl.callback import Callback
from pedl.frameworks.keras._adapter import LegacyTFKerasTrialController
from pedl.keras._keras import keras


class TFKerasTrial(Trial):
    """Subclass it and define ``build_model(hparams)``; the model definition also defines
    ``make_data_loaders(experiment_config, hparams)`` returning (training, validation) data in
    any form today's ``pedl.keras.TFKerasTrial`` accepts.
    """

    framework: ClassVar[str] = "keras"
    trial_controller_class: ClassVar[Any] = LegacyTFKerasTrialController

    def __init__(self, hparams: dict[str, Any], *_: Any, **__: Any) -> None:
        super().__init__(None)
        self.hparams = hparams

    @abc.abstractmethod
    def build_model(self, hparams: dict[str, Any]) -> keras.Model:
        """Return the compiled ``keras.Model`` for these hyperparameters."""

    def session_config(self, hparams: dict[str, Any]) -> tf.compat.v1.ConfigProto:
        return tf.compat.v1.ConfigProto(allow_soft_placement=True)

    def keras_callbacks(self, hparams: dict[str, Any]) -> list[keras.callbacks.Callback]:
        return []

    def callbacks(self, hparams: dict[str, Any]) -> list[Callback]:
        """``pedl.callback.Callback`` instances, called around training and validation steps."""
        return []
