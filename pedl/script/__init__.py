"""Simple model definitions: a script (or function) that calls ``model.fit``, run as a trial.

``entrypoint: train.py``, ``entrypoint: python3 train.py --flags`` or
``entrypoint: module:function`` in the experiment config; PEDL intercepts the script's
``model.fit`` and trains it like a TFKerasTrial. Scripts read hyperparameters with
:func:`get_hyperparameter` (also ``pedl.get_hyperparameter``); Determined 0.38's scripts use
:func:`get_cluster_info`, ``pedl.core.init()`` and :class:`DeterminedCallback`.

Importing this package does not import TensorFlow; ``DeterminedCallback``, ``TensorBoard``
(Keras callbacks) and ``from_tf_config`` import it when first used. With
``TF_USE_LEGACY_KERAS=1`` (Keras 2 as ``tf.keras``) the callbacks are Keras 2 ones
(:mod:`pedl.script._keras2`).
"""

import os
from typing import Any

from pedl.script._cluster_info import ClusterInfo, TrialClusterInfo, get_cluster_info
from pedl.script._controller import ScriptController
from pedl.script._definition import trial_class_of
from pedl.script._distributed import DistributedContext
from pedl.script._hparams import get_hyperparameter
from pedl.script._trial import ScriptTrial

__all__ = [
    "ClusterInfo",
    "DeterminedCallback",
    "DistributedContext",
    "ScriptController",
    "ScriptTrial",
    "TensorBoard",
    "TrialClusterInfo",
    "from_tf_config",
    "get_cluster_info",
    "get_hyperparameter",
    "trial_class_of",
]


def _legacy_keras() -> bool:
    """``TF_USE_LEGACY_KERAS`` set as TensorFlow reads it: ``tf.keras`` is Keras 2 (tf-keras;
    :func:`pedl.keras._keras.legacy_keras`, without importing TensorFlow)."""
    return os.environ.get("TF_USE_LEGACY_KERAS") in ("true", "True", "1")


def __getattr__(name: str) -> Any:
    if name in ("DeterminedCallback", "TensorBoard") and _legacy_keras():
        # Keras 2 (TF_USE_LEGACY_KERAS=1): the script's fit runs as Keras 2 runs it.
        from pedl.script import _keras2

        return getattr(_keras2, name)
    if name == "DeterminedCallback":
        from pedl.script._callback import DeterminedCallback

        return DeterminedCallback
    if name == "TensorBoard":
        from pedl.script._tensorboard import TensorBoard

        return TensorBoard
    if name == "from_tf_config":
        from pedl.script._tf_config import from_tf_config

        return from_tf_config
    raise AttributeError(f"module 'pedl.script' has no attribute {name!r}")
