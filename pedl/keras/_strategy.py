"""The ``tf.distribute`` side of a multi-worker Keras trial.

With several workers (``PEDL_SIZE`` > 1, ``TF_CONFIG`` set by the launcher) each process
builds one :class:`tf.distribute.MultiWorkerMirroredStrategy` before any other TensorFlow op
(TensorFlow configures its collectives when its eager context starts), the user's model is
built and compiled under its scope, and the controller trains with its own step around the
compiled model's ``train_step``: Keras 3's ``model.fit`` does not work under this strategy
(keras-team/keras#20585), the model's ``train_step`` does.
"""

from __future__ import annotations

import json
import os

import tensorflow as tf

from pedl import core

_BYTES_PER_PACK = 32 * 2**20
"""Gradients are all-reduced in packs of up to this many bytes (one collective for a small
model's gradients instead of one per variable: each costs round trips between workers)."""

_strategy: tf.distribute.MultiWorkerMirroredStrategy | None = None
_made_for: str | None = None


class StrategyError(RuntimeError):
    """The multi-worker strategy cannot be built as the trial's workers need it."""


def multi_worker_strategy(
    distributed: core.DistributedContext,
) -> tf.distribute.MultiWorkerMirroredStrategy:
    """This process's ``MultiWorkerMirroredStrategy`` (made once per process).

    Where this worker has one core, TensorFlow runs on one thread
    (:func:`one_thread_where_one_core`). Its collectives use the ring implementation,
    gradients packed (``_BYTES_PER_PACK``), with the distributed context's timeout
    (``PEDL_DIST_TIMEOUT``, 30 minutes by default), so that a collective stuck on a dead or
    stopped peer errors out instead of waiting forever. ``TF_CONFIG`` must name as many
    workers as the trial has, with this worker's rank as its task index.
    """
    global _strategy, _made_for
    raw = os.environ.get("TF_CONFIG")
    if _strategy is not None:
        if raw != _made_for:
            raise StrategyError(
                "this process already trained a multi-worker trial with another TF_CONFIG: "
                "TensorFlow's collectives are set up once per process, so each multi-worker "
                "trial needs fresh worker processes"
            )
        return _strategy
    if not raw:
        raise StrategyError(
            f"this trial runs on {distributed.size} workers but TF_CONFIG is not set: the "
            "launcher must set it for tf.distribute.MultiWorkerMirroredStrategy"
        )
    config = json.loads(raw)
    workers = config.get("cluster", {}).get("worker", [])
    index = config.get("task", {}).get("index")
    if len(workers) != distributed.size or index != distributed.rank:
        raise StrategyError(
            f"TF_CONFIG names {len(workers)} workers and task index {index}, but this is rank "
            f"{distributed.rank} of {distributed.size} (PEDL_RANK, PEDL_SIZE)"
        )
    one_thread_where_one_core(distributed)
    options = tf.distribute.experimental.CommunicationOptions(
        timeout_seconds=distributed.timeout,
        bytes_per_pack=_BYTES_PER_PACK,
        implementation=tf.distribute.experimental.CommunicationImplementation.RING,
    )
    _strategy = tf.distribute.MultiWorkerMirroredStrategy(communication_options=options)
    _made_for = raw
    return _strategy


def one_thread_where_one_core(distributed: core.DistributedContext) -> None:
    """Run TensorFlow's ops on one thread (intra- and inter-op) where this worker has one
    core or less: the cores this process may use, shared among the workers of this host
    (``local_size``); more threads would only take turns with the other workers' on the same
    cores. ``TF_NUM_INTRAOP_THREADS`` or ``TF_NUM_INTEROP_THREADS`` in the environment
    decide instead."""
    if "TF_NUM_INTRAOP_THREADS" in os.environ or "TF_NUM_INTEROP_THREADS" in os.environ:
        return
    cores = len(os.sched_getaffinity(0)) if hasattr(os, "sched_getaffinity") else os.cpu_count()
    if (cores or 1) // max(distributed.local_size, 1) > 1:
        return
    try:
        tf.config.threading.set_intra_op_parallelism_threads(1)
        tf.config.threading.set_inter_op_parallelism_threads(1)
    except RuntimeError:  # TensorFlow already started (a script's own ops): as it is
        pass


def current_strategy() -> tf.distribute.MultiWorkerMirroredStrategy | None:
    """The strategy :func:`multi_worker_strategy` made in this process, if any."""
    return _strategy
