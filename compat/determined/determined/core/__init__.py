"""``determined.core``: PEDL's core context (``pedl.core``).

``core.init()`` (Determined 0.38's entry to the Core API in scripts) and the context parts
(``DistributedContext``, ``TrainContext``, ``CheckpointContext``, ``SearcherContext``,
``PreemptContext``) are PEDL's. Names of Determined's Core API that PEDL does not have raise
an error naming what to use instead.
"""

from __future__ import annotations

from typing import Any

from determined._unsupported import module_getattr

_PEDL_NAMES = (
    "CheckpointContext",
    "Context",
    "DistributedContext",
    "PreemptContext",
    "SearcherContext",
    "SearcherOperation",
    "TrainContext",
    "Unit",
    "init",
)

_getattr = module_getattr(
    "determined.core",
    forwards={name: f"pedl.core:{name}" for name in _PEDL_NAMES}
    # 0.38's from_tf_config() builds a tf.distribute strategy: the script code's subclass.
    | {"DistributedContext": "pedl.script:DistributedContext"},
    unsupported={
        "ProfilerContext": "Profile with TensorBoard's profiler in your Keras callbacks",
        "ExperimentalCoreContext": "PEDL has no experimental core features",
        "TensorboardMode": "PEDL writes TensorBoard events to the trial's TensorBoard "
        "directory (pedl.keras.callbacks.TensorBoard); `pedl tensorboard` serves them",
        "DummyDistributedContext": "Use pedl.core.DistributedContext.single()",
    },
)


def __getattr__(name: str) -> Any:
    return _getattr(name)
