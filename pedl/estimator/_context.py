"""What an EstimatorTrial sees of its trial: hyperparameters, config, and the wrappers."""

from __future__ import annotations

import logging
from collections.abc import Callable
from typing import Any

import tensorflow as tf

from pedl import core
from pedl.estimator import _metric_reducer
from pedl.estimator._metric_reducer import MetricReducer

logger = logging.getLogger("pedl.estimator")

ServingInputReceiverFn = Callable[..., Any]
"""A ``serving_input_receiver_fn``: returns a ``tf.estimator.export.ServingInputReceiver`` (or
``TensorServingInputReceiver``); ``build_serving_input_receiver_fns`` maps names to them."""


class EstimatorExperimentalContext:
    """Experimental features of the estimator API (none yet); ``context.experimental``."""


class EstimatorTrialContext:
    """Runtime information and wrappers for an ``EstimatorTrial``.

    Built by PEDL and passed to the trial's ``__init__``. ``context.distributed`` is the
    trial's :class:`pedl.core.DistributedContext`.
    """

    def __init__(self, core_context: core.Context) -> None:
        self._core = core_context
        self._info = core_context.info
        self.distributed: core.DistributedContext = core_context.distributed
        self.experimental = EstimatorExperimentalContext()
        self._stop_requested = False
        self.optimizer_initialized = False
        """Whether :meth:`wrap_optimizer` was called (Determined's attribute)."""
        self.dataset_initialized = False
        """Whether :meth:`wrap_dataset` was called (Determined's attribute)."""

    # Trial information -------------------------------------------------------------------

    def get_hparams(self) -> dict[str, Any]:
        """All of this trial's hyperparameter values (nested groups as dicts)."""
        return dict(self._info.hparams)

    def get_hparam(self, name: str) -> Any:
        """One hyperparameter's value; a KeyError lists the names that exist."""
        if name not in self._info.hparams:
            raise KeyError(
                f"no hyperparameter {name!r} in this trial; "
                f"defined: {', '.join(sorted(self._info.hparams)) or '(none)'}"
            )
        return self._info.hparams[name]

    def get_experiment_config(self) -> dict[str, Any]:
        """The experiment configuration, with defaults filled in, as a plain dict."""
        return self._info.config.as_dict()

    def get_data_config(self) -> dict[str, Any]:
        """The free-form ``data`` section of the experiment configuration."""
        return dict(self._info.config.data)

    def get_trial_id(self) -> int:
        return self._info.trial_id

    def get_experiment_id(self) -> int:
        return self._info.experiment_id

    def get_trial_seed(self) -> int:
        return self._info.trial_seed

    def get_global_batch_size(self) -> int:
        """The ``global_batch_size`` hyperparameter: the batch size summed over all slots."""
        if "global_batch_size" not in self._info.hparams:
            raise ValueError(
                "this trial needs a 'global_batch_size' hyperparameter (the batch size of one "
                "training step summed over all slots); add it under `hyperparameters`"
            )
        value = self._info.hparams["global_batch_size"]
        if isinstance(value, bool) or not isinstance(value, int) or value <= 0:
            raise ValueError(f"global_batch_size must be a positive integer, got {value!r}")
        return value

    def get_per_slot_batch_size(self) -> int:
        """The batch size each slot trains with: global_batch_size / number of slots."""
        global_size = self.get_global_batch_size()
        slots = self.distributed.get_size()
        if global_size % slots:
            raise ValueError(
                f"global_batch_size ({global_size}) must be divisible by the number of slots "
                f"({slots})"
            )
        return global_size // slots

    # Stopping early ----------------------------------------------------------------------

    def set_stop_requested(self, stop_requested: bool) -> None:
        """Ask PEDL to stop training this trial after the current batch: it validates and
        checkpoints, and the trial ends ``STOPPED_EARLY``. ``False`` withdraws a request not
        yet acted upon. (A training hook's ``run_context.request_stop()`` does the same.)"""
        if not isinstance(stop_requested, bool):
            raise TypeError(
                f"set_stop_requested expects a bool, got {type(stop_requested).__name__}"
            )
        self._stop_requested = stop_requested

    def get_stop_requested(self) -> bool:
        """Whether the trial asked to stop early (:meth:`set_stop_requested`)."""
        return self._stop_requested

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
