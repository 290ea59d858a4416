"""``from_tf_config()``: Determined 0.38's ``DistributedContext.from_tf_config()``, for scripts."""

from __future__ import annotations

import tensorflow as tf

from pedl import core


def from_tf_config() -> tuple[core.DistributedContext, tf.distribute.Strategy]:
    """The trial's distributed context and the ``tf.distribute`` strategy to build the model
    in (``with strategy.scope():``).

    A script trial runs on one slot: the strategy is TensorFlow's default one. Outside PEDL
    this is :meth:`pedl.core.DistributedContext.from_tf_config` (the ``TF_CONFIG``
    environment variable's workers, else a single process).
    """
    context = core.active_context()
    if context is None:
        return core.DistributedContext.from_tf_config()
    if context.distributed.get_size() > 1:
        raise RuntimeError(
            "a script trial runs on one slot (slots_per_trial: 1); for several slots write a "
            "pedl.keras.TFKerasTrial"
        )
    return context.distributed, tf.distribute.get_strategy()
