"""The EstimatorTrial interface users implement."""

from __future__ import annotations

import abc
from typing import Any, ClassVar

from pedl._trial import Trial
from pedl.estimator._context import EstimatorTrialContext, ServingInputReceiverFn
from pedl.estimator._controller import EstimatorTrialController


class EstimatorTrial(Trial):
    """Subclass it to train a ``tf.estimator.Estimator`` with PEDL.

    Implement ``build_estimator``, ``build_train_spec`` and ``build_validation_spec`` (and
    optionally ``build_serving_input_receiver_fns``); keep ``context`` (an
    :class:`EstimatorTrialContext`) in ``__init__``. Each method may instead take the trial's
    hyperparameters as its one argument (``build_estimator(self, hparams)``, PEDL 0.x's
    form); ``self.hparams`` holds them too.

    PEDL trains in chunks (``estimator.train`` until the chunk's batches are done), validates
    with ``estimator.evaluate``, and checkpoints the estimator's latest model-directory
    checkpoint, plus one SavedModel per serving input receiver function. The train spec's
    ``max_steps`` is ignored: the searcher decides how long to train. Its ``input_fn`` must
    return a ``tf.data.Dataset`` of batches; PEDL repeats it, and on resume skips the batches
    already trained.
    """

    framework: ClassVar[str] = "estimator"
    trial_controller_class: ClassVar[Any] = EstimatorTrialController

    def __init__(self, context: EstimatorTrialContext) -> None:
        super().__init__(context)
        self.context: EstimatorTrialContext = context
        self.hparams: dict[str, Any] = context.get_hparams()

    @abc.abstractmethod
    def build_estimator(self) -> Any:
        """Return the ``tf.estimator.Estimator`` (premade or custom) to train and validate.

        Its ``model_dir``, ``tf_random_seed`` and checkpoint saving are PEDL's to set."""

    @abc.abstractmethod
    def build_train_spec(self) -> Any:
        """Return the ``tf.estimator.TrainSpec``: an ``input_fn`` returning a batched
        ``tf.data.Dataset``, and optional ``hooks``."""

    @abc.abstractmethod
    def build_validation_spec(self) -> Any:
        """Return the ``tf.estimator.EvalSpec``: validation evaluates ``steps`` batches, or
        until the ``input_fn``'s dataset ends when ``steps`` is None."""

    def build_serving_input_receiver_fns(self) -> dict[str, ServingInputReceiverFn]:
        """Names mapped to ``serving_input_receiver_fn``s: each checkpoint then holds one
        SavedModel per name, under ``<name>/<timestamp>/`` (``Estimator.export_saved_model``).
        """
        return {}
