"""``from_tf_config()``: Determined 0.38's ``DistributedContext.from_tf_config()``, for scripts."""

from __future__ import annotations

import tensorflow as tf

from pedl import core
from pedl.keras._strategy import multi_worker_strategy


def from_tf_config() -> tuple[core.DistributedContext, tf.distribute.Strategy]:
    """The trial's distributed context and the ``tf.distribute`` strategy to build the model
    in (``with strategy.scope():``).

    In a script trial on one slot the strategy is TensorFlow's default one; on several the
    trial's ``MultiWorkerMirroredStrategy`` (the script already runs in its scope). Outside
    PEDL this is :meth:`pedl.core.DistributedContext.from_tf_config` (the ``TF_CONFIG``
    environment variable's workers, else a single process).
    """
    context = core.active_context()
    if context is None:
        return core.DistributedContext.from_tf_config()
    if context.distributed.get_size() > 1:
        return context.distributed, multi_worker_strategy(context.distributed)
    return context.distributed, tf.distribute.get_strategy()
