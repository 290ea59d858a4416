"""Creating every variable of a compiled model before its first training step.

A checkpoint can only be restored into variables that exist, and Keras creates the model's,
the compiled loss's and metrics' and the optimizer's variables lazily, in the first train
step. PEDL creates them ahead of that step with public Keras calls on one real batch: the
model is called on it (inference mode: no dropout, no random draws), the compiled loss and
metrics are computed on its predictions (their state is reset afterwards), and the optimizer
is built for the trainable variables. Everything runs eagerly on real values, so a model or
metric that needs concrete values (a metric written with NumPy under ``run_eagerly=True``, a
shape known only from data) builds as it would in ``fit``. An error raised there is the user's
own, unwrapped, so the trial's failure names its type and the user's line.
"""

from __future__ import annotations

from typing import Any

import tensorflow as tf

from pedl.keras._keras import LEGACY, build_optimizer, keras


def build_variables(model: keras.Model, batch: Any) -> None:
    """Create the variables of ``model`` (compiled), its loss, metrics and optimizer."""
    if LEGACY:  # Keras 2's compiled loss and metrics take tensors (fit converts the data)
        batch = tf.nest.map_structure(tf.convert_to_tensor, batch)
    x, y, sample_weight = keras.utils.unpack_x_y_sample_weight(batch)

    def loss_and_metrics() -> None:
        y_pred = model(x, training=False)
        if model.loss is not None:
            model.compute_loss(x=x, y=y, y_pred=y_pred, sample_weight=sample_weight)
        model.compute_metrics(x, y, y_pred, sample_weight=sample_weight)

    if tf.distribute.has_strategy():
        # In a replica's context, as in a train step: Keras 2's loss and metric state
        # variables are sum-on-read, which cannot be added to across replicas.
        tf.distribute.get_strategy().run(loss_and_metrics)
    else:
        loss_and_metrics()
    model.reset_metrics()
    if model.optimizer is not None:
        build_optimizer(model.optimizer, model.trainable_variables)
