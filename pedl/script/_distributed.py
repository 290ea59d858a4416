"""Determined 0.38's ``DistributedContext.from_tf_config()``, which builds a
``tf.distribute`` strategy, lives here with the script and Keras code rather than in
:mod:`pedl.core` (which imports no framework); the ``determined`` name's
``DistributedContext`` is this one, so 0.38's scripts find it where they look.
"""

from __future__ import annotations

import json
from typing import TYPE_CHECKING, Any

from pedl import core

if TYPE_CHECKING:
    import tensorflow as tf


class DistributedContext(core.DistributedContext):
    """:class:`pedl.core.DistributedContext` with Determined 0.38's ``from_tf_config()``."""

    @staticmethod
    def from_tf_config() -> tuple[core.DistributedContext, tf.distribute.Strategy]:
        """See :func:`pedl.script.from_tf_config`. Imports TensorFlow."""
        from pedl.script._tf_config import from_tf_config  # TensorFlow, only when called

        return from_tf_config()


def tf_config_ranks(tf_config: str | None) -> dict[str, Any] | None:
    """The :class:`DistributedContext` arguments of a multi-worker ``TF_CONFIG`` (a JSON
    string), or None when it names fewer than two workers (or is unset)."""
    if not tf_config:
        return None
    config = json.loads(tf_config)
    task_type = config["task"]["type"]
    if task_type != "worker":
        raise RuntimeError(
            "DistributedContext.from_tf_config() supports the default strategy, "
            "MirroredStrategy and MultiWorkerMirroredStrategy only, but TF_CONFIG has "
            f"task type {task_type!r}: {tf_config}"
        )
    workers = config["cluster"]["worker"]
    if len(workers) < 2:
        return None
    index = int(config["task"]["index"])
    return {
        "rank": index,
        "size": len(workers),
        "local_rank": 0,
        "local_size": 1,
        "cross_rank": index,
        "cross_size": len(workers),
        "chief_ip": workers[0].rsplit(":", 1)[0].strip("[]"),
    }
