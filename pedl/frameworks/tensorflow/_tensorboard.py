"""``pedl.frameworks.tensorflow.TensorBoard``: PEDL 0.x's TensorBoard callback."""

from __future__ import annotations

import os
from typing import Any

import tensorflow as tf

from pedl.callback import Callback


class TensorBoard(Callback):
    """Writes training and validation metrics as TensorBoard scalars.

    Events go to ``<log_directory>/<trial_id>/training`` and ``.../validation``, one point per
    step (``step_id``).
    """

    def __init__(self, log_directory: str) -> None:
        self.log_directory = log_directory
        self.trial_id = 0
        self._writers: dict[str, Any] = {}

    def set_trial_id(self, trial_id: int) -> None:
        """Called by PEDL before training."""
        self.trial_id = trial_id

    def _write(self, kind: str, step_id: int, metrics: dict[str, Any]) -> None:
        writer = self._writers.get(kind)
        if writer is None:
            path = os.path.join(self.log_directory, str(self.trial_id), kind)
            writer = self._writers[kind] = tf.summary.create_file_writer(path)
        with writer.as_default():
            for name, value in metrics.items():
                tf.summary.scalar(name, float(value), step=step_id)
        writer.flush()

    def on_train_step_end(self, step_id: int, metrics: list[dict[str, Any]]) -> None:
        """``metrics`` holds one dict per batch of the step; the step's point is their mean,
        as the step's reported training metrics are."""
        if metrics:
            names = [name for name in metrics[0] if all(name in m for m in metrics)]
            means = {name: sum(float(m[name]) for m in metrics) / len(metrics) for name in names}
            self._write("training", step_id, means)

    def on_validation_step_end(self, step_id: int, metrics: dict[str, Any]) -> None:
        self._write("validation", step_id, metrics)
