"""The TFKerasTrial interface users implement."""

from __future__ import annotations

import abc
from typing import Any, ClassVar

import tensorflow as tf

from pedl._trial import Trial
from pedl.keras._context import TFKerasTrialContext
from pedl.keras._controller import TFKerasTrialController
from pedl.keras._keras import keras


class TFKerasTrial(Trial):
    """Subclass it to train a ``keras.Model`` with PEDL.

    Implement ``build_model``, ``build_training_data_loader`` and
    ``build_validation_data_loader``; keep ``context`` (a :class:`TFKerasTrialContext`) in
    ``__init__``. PEDL builds the model and the data, trains in chunks with ``model.fit``,
    validates with ``model.evaluate``, and checkpoints everything exact resume needs.
    """

    framework: ClassVar[str] = "keras"
    trial_controller_class: ClassVar[Any] = TFKerasTrialController

    def __init__(self, context: TFKerasTrialContext) -> None:
        super().__init__(context)
        self.context: TFKerasTrialContext = context

    @abc.abstractmethod
    def build_model(self) -> keras.Model:
        """Return the model: create it, ``context.wrap_model`` it, then ``compile`` it."""

    @abc.abstractmethod
    def build_training_data_loader(self) -> Any:
        """Return the training data.

        One of: ``(x, y)`` or ``(x, y, sample_weights)`` where x is an array, a list of arrays
        or a dict of arrays (batched by PEDL with the per-slot batch size); a
        ``keras.utils.Sequence`` / ``PyDataset`` or a :class:`SequenceAdapter` of one; a
        ``tf.data.Dataset`` wrapped with ``context.wrap_dataset``.
        """

    @abc.abstractmethod
    def build_validation_data_loader(self) -> Any:
        """Return the validation data, in any of the forms of the training data."""

    def session_config(self) -> tf.compat.v1.ConfigProto:
        """Threading and placement options; PEDL applies them through the TF2 config APIs.

        Honoured fields: ``intra_op_parallelism_threads``, ``inter_op_parallelism_threads``,
        ``allow_soft_placement``, ``gpu_options.allow_growth``.
        """
        return tf.compat.v1.ConfigProto(allow_soft_placement=True)

    def keras_callbacks(self) -> list[keras.callbacks.Callback]:
        """Keras callbacks (plain or :class:`pedl.keras.callbacks.Callback`) used in training."""
        return []
