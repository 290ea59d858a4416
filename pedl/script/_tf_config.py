"""``from_tf_config()``: Determined 0.38's ``DistributedContext.from_tf_config()``, for scripts."""

from __future__ import annotations

import os

import tensorflow as tf

from pedl import core
from pedl.keras._strategy import multi_worker_strategy
from pedl.script._distributed import DistributedContext, tf_config_ranks


def from_tf_config() -> tuple[core.DistributedContext, tf.distribute.Strategy]:
    """The trial's distributed context and the ``tf.distribute`` strategy to build the model
    in (``with strategy.scope():``).

    In a script trial on one slot the strategy is TensorFlow's default one; on several the
    trial's ``MultiWorkerMirroredStrategy`` (the script already runs in its scope). Outside
    PEDL, from the ``TF_CONFIG`` environment variable: several workers in it make each
    worker a machine of its own (rank and cross rank are its task index; the chief is
    worker 0) with a ``MultiWorkerMirroredStrategy``; otherwise a single-process context,
    with a ``MirroredStrategy`` when several GPUs are visible, else TensorFlow's default
    strategy. Only ``worker`` tasks are supported.
    """
    context = core.active_context()
    if context is None:
        ranks = tf_config_ranks(os.environ.get("TF_CONFIG"))
        if ranks is not None:
            return DistributedContext(**ranks), tf.distribute.MultiWorkerMirroredStrategy()
        gpus = len(tf.config.list_physical_devices("GPU"))
        strategy = tf.distribute.MirroredStrategy() if gpus > 1 else tf.distribute.get_strategy()
        return DistributedContext.single(), strategy
    if context.distributed.get_size() > 1:
        return context.distributed, multi_worker_strategy(context.distributed)
    return context.distributed, tf.distribute.get_strategy()
