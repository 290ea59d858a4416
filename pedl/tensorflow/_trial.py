"""The TensorFlowTrial interface users implement (a graph and a session, through
``tf.compat.v1``)."""

from __future__ import annotations

import abc
from typing import Any, ClassVar

import tensorflow as tf

from pedl._trial import Trial
from pedl.callback import Callback
from pedl.tensorflow._controller import TensorFlowTrialController


class TensorFlowTrial(Trial):
    """Subclass it to train a TensorFlow graph with PEDL.

    The model definition also defines ``make_data_loaders(experiment_config, hparams)``
    returning ``(training, validation)`` batched ``tf.data.Dataset`` objects with the same
    element structure. PEDL builds one graph: ``build_graph(record, is_training)`` on the
    records of either dataset, ``optimizer().minimize(outputs["loss"])``, and runs it in a
    ``tf.compat.v1.Session``; training reports ``loss`` and :meth:`training_metrics`
    averaged over each chunk, validation the :meth:`validation_metrics` averaged over the
    validation set's batches.
    """

    framework: ClassVar[str] = "tensorflow"
    trial_controller_class: ClassVar[Any] = TensorFlowTrialController

    def __init__(self, hparams: dict[str, Any], *_: Any, **__: Any) -> None:
        super().__init__(None)
        self.hparams = hparams

    @abc.abstractmethod
    def optimizer(self) -> tf.compat.v1.train.Optimizer:
        """The optimizer, e.g. ``tf.compat.v1.train.MomentumOptimizer(0.1, 0.9)``."""

    @abc.abstractmethod
    def build_graph(self, record: Any, is_training: tf.Tensor) -> dict[str, tf.Tensor]:
        """Build the graph on ``record`` (a batch of either dataset, as a nested structure of
        tensors); ``is_training`` is a boolean tensor, True while training. Return a dict of
        named tensors that holds ``"loss"`` and every metric named by the metric methods."""

    @abc.abstractmethod
    def validation_metrics(self) -> list[str]:
        """Names of ``build_graph`` outputs evaluated on the validation set."""

    def training_metrics(self) -> list[str]:
        """Names of ``build_graph`` outputs reported in training besides ``loss``."""
        return []

    def session_config(self) -> tf.compat.v1.ConfigProto:
        """The session's ``ConfigProto``."""
        return tf.compat.v1.ConfigProto(allow_soft_placement=True)

    def callbacks(self, hparams: dict[str, Any]) -> list[Callback]:
        """``pedl.callback.Callback`` instances, called around training and validation steps."""
        return []
