"""``from_tf_config()``: Determined 0.38's ``DistributedContext.from_tf_config()``."""

from __future__ import annotations

import tensorflow as tf

from pedl import core


def from_tf_config() -> tuple[core.DistributedContext, tf.distribute.Strategy]:
    """The trial's distributed context and the ``tf.distribute`` strategy to build the model
    in (``with strategy.scope():``).

    A script trial runs on one slot: the strategy is TensorFlow's default one. Outside PEDL
    the context is a single process's.
    """
    context = core.active_context()
    distributed = context.distributed if context is not None else core.DistributedContext.single()
    if distributed.get_size() > 1:
        raise RuntimeError(
            "a script trial runs on one slot (slots_per_trial: 1); for several slots write a "
            "pedl.keras.TFKerasTrial"
        )
    return distributed, tf.distribute.get_strategy()
