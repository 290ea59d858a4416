"""Simple model definitions: a script (or function) that calls ``model.fit``, run as a trial.

``entrypoint: train.py``, ``entrypoint: python3 train.py --flags`` or
``entrypoint: module:function`` in the experiment config; PEDL intercepts the script's
``model.fit`` and trains it like a TFKerasTrial. Scripts read hyperparameters with
:func:`get_hyperparameter` (also ``pedl.get_hyperparameter``); Determined 0.38's scripts use
:func:`get_cluster_info`, ``pedl.core.init()`` and :class:`DeterminedCallback`.

Importing this package does not import TensorFlow; ``DeterminedCallback``, ``TensorBoard``
(Keras callbacks) and ``from_tf_config`` import it when first used.
"""

from typing import Any

from pedl.script._cluster_info import ClusterInfo, TrialClusterInfo, get_cluster_info
from pedl.script._controller import ScriptController
from pedl.script._hparams import get_hyperparameter
from pedl.script._trial import ScriptTrial

__all__ = [
    "ClusterInfo",
    "DeterminedCallback",
    "ScriptController",
    "ScriptTrial",
    "TensorBoard",
    "TrialClusterInfo",
    "from_tf_config",
    "get_cluster_info",
    "get_hyperparameter",
]


def __getattr__(name: str) -> Any:
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
