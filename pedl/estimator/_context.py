"""What an EstimatorTrial sees of its trial: hyperparameters, config, and the wrappers."""

from __future__ import annotations

import logging
from collections.abc import Callable
from typing import Any

import tensorflow as tf

from pedl import core
from pedl._trial_context import TrialContext
from pedl.estimator import _metric_reducer
from pedl.estimator._metric_reducer import MetricReducer

logger = logging.getLogger("pedl.estimator")

ServingInputReceiverFn = Callable[..., Any]
"""A ``serving_input_receiver_fn``: returns a ``tf.estimator.export.ServingInputReceiver`` (or
``TensorServingInputReceiver``); ``build_serving_input_receiver_fns`` maps names to them."""


class EstimatorExperimentalContext:
    """Experimental features of the estimator API (none yet); ``context.experimental``."""


class EstimatorTrialContext(TrialContext):
    """Runtime information and wrappers for an ``EstimatorTrial``.

    Built by PEDL and passed to the trial's ``__init__``. ``context.distributed`` is the
    trial's :class:`pedl.core.DistributedContext`. A training hook's
    ``run_context.request_stop()`` does what :meth:`set_stop_requested` does.
    """

    def __init__(self, core_context: core.Context) -> None:
        super().__init__(core_context)
        self.experimental = EstimatorExperimentalContext()
        self.optimizer_initialized = False
        """Whether :meth:`wrap_optimizer` was called (Determined's attribute)."""
        self.dataset_initialized = False
        """Whether :meth:`wrap_dataset` was called (Determined's attribute)."""

    # Wrappers ----------------------------------------------------------------------------

    def wrap_optimizer(self, optimizer: Any) -> Any:
        """Register the optimizer the estimator trains with (call it right after creating
        the optimizer, and use what it returns). A string names no optimizer object."""
        if isinstance(optimizer, str):
            raise TypeError(
                f"wrap_optimizer expects an optimizer object, got the name {optimizer!r}: create "
                "the optimizer (e.g. tf.compat.v1.train.AdamOptimizer(...)) and wrap that"
            )
        self.optimizer_initialized = True
        return optimizer

    def wrap_dataset(self, dataset: Any, shard_dataset: bool = True) -> Any:
        """Register a ``tf.data.Dataset`` (call it right after creating the dataset, in the
        ``input_fn``, and use what it returns; it may be transformed further).

        With several slots and ``shard_dataset=True`` each worker keeps every ``size``-th
        element starting at its rank.
        """
        if not isinstance(dataset, tf.data.Dataset):
            raise TypeError(f"wrap_dataset expects a tf.data.Dataset, got {type(dataset).__name__}")
        self.dataset_initialized = True
        if shard_dataset and self.distributed.get_size() > 1:
            dataset = dataset.shard(self.distributed.get_size(), self.distributed.get_rank())
        return dataset

    # Metrics -----------------------------------------------------------------------------

    def make_metric(
        self,
        metric: Any,
        reducer: MetricReducer | Callable[[list[Any]], Any],
        numpy_dtype: Any,
    ) -> tuple[Any, Any]:
        """A validation metric computed in Python: call it in the ``model_fn`` in EVAL mode and
        put the returned ``(value_op, update_op)`` in ``eval_metric_ops``. ``metric`` is a
        tensor, a flat list or a flat dict of tensors; ``reducer`` a :class:`MetricReducer` or a
        function of the list of every batch's value (e.g. ``sklearn.metrics.roc_auc_score`` on
        them); ``numpy_dtype`` the result's type."""
        return _metric_reducer.make_metric(metric, reducer, numpy_dtype)
