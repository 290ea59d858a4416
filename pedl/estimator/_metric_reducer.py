"""Validation metrics computed in Python from every batch's values (``context.make_metric``)."""

from __future__ import annotations

import abc
from collections.abc import Callable, Sequence
from typing import Any

import numpy as np
import tensorflow as tf


class MetricReducer(abc.ABC):
    """Computes a validation metric in two steps: ``accumulate`` gets each batch's value of the
    metric tensor(s) and returns the state so far; ``cross_slot_reduce`` gets the list of each
    slot's last state (one slot: a list of one) and returns the metric.

    Give an instance to :meth:`EstimatorTrialContext.make_metric` in the ``model_fn`` (EVAL
    mode), so each evaluation starts from a fresh one.
    """

    @abc.abstractmethod
    def accumulate(self, metric: Any) -> Any:
        """Take one batch's value (an array, a list or a dict of arrays, as given)."""

    @abc.abstractmethod
    def cross_slot_reduce(self, per_slot_metrics: list[Any]) -> Any:
        """Return the metric from the slots' final ``accumulate`` results."""


class _ListReducer(MetricReducer):
    """A reducer function of the list of every batch's value, as a MetricReducer."""

    def __init__(self, reduce_fn: Callable[[list[Any]], Any]) -> None:
        self._reduce_fn = reduce_fn
        self._values: list[Any] = []

    def accumulate(self, metric: Any) -> list[Any]:
        self._values.append(metric)
        return self._values

    def cross_slot_reduce(self, per_slot_metrics: list[Any]) -> Any:
        return self._reduce_fn([value for values in per_slot_metrics for value in values])


def make_metric(
    metric: Any,
    reducer: MetricReducer | Callable[[list[Any]], Any],
    numpy_dtype: Any,
) -> tuple[Any, Any]:
    """A ``(value_op, update_op)`` pair for ``EstimatorSpec(eval_metric_ops=...)``: the update
    hands each batch's ``metric`` (a tensor, a flat list or a flat dict of tensors) to
    ``reducer`` (a :class:`MetricReducer`, or a function of the list of every batch's value);
    the value is the reduction, as ``numpy_dtype``."""
    if not isinstance(reducer, MetricReducer):
        if not callable(reducer):
            raise TypeError(
                "make_metric's reducer must be a MetricReducer or a function of the list of the "
                f"batches' values, got {type(reducer).__name__}"
            )
        reducer = _ListReducer(reducer)
    tensors, rebuild = _flatten(metric)
    dtype = np.dtype(numpy_dtype)
    last: list[Any] = [None]

    def update(*values: Any) -> None:
        last[0] = reducer.accumulate(rebuild(list(values)))

    def value() -> Any:
        return np.asarray(reducer.cross_slot_reduce([last[0]])).astype(dtype)

    update_op = tf.compat.v1.py_func(update, tensors, [], stateful=True)
    value_op = tf.compat.v1.py_func(value, [], tf.as_dtype(dtype), stateful=True)
    return value_op, update_op


def _flatten(metric: Any) -> tuple[Sequence[Any], Callable[[list[Any]], Any]]:
    if isinstance(metric, tf.Tensor):
        return [metric], lambda values: values[0]
    if isinstance(metric, list | tuple):
        if not all(isinstance(m, tf.Tensor) for m in metric):
            raise TypeError("make_metric: a list metric must be a flat list of tf.Tensors")
        return list(metric), lambda values: values
    if isinstance(metric, dict):
        if not all(isinstance(k, str) and isinstance(v, tf.Tensor) for k, v in metric.items()):
            raise TypeError("make_metric: a dict metric must map strings to tf.Tensors")
        keys = list(metric)
        return [metric[k] for k in keys], lambda values: dict(zip(keys, values, strict=True))
    raise TypeError(
        "make_metric's metric must be a tf.Tensor, a list of tf.Tensors or a dict of strings to "
        f"tf.Tensors, got {type(metric).__name__}"
    )
