"""``determined.keras``: Determined's TF-Keras API of every era, as PEDL's ``pedl.keras``.

- 2020 (the first context API): ``TFKerasTrial(context)``, ``TFKerasContext``,
  ``KerasDataAdapter(data=...)``, ``InMemorySequence``;
- the ``InputData``/adapter years: ``InputData``, ``ArrayLike``, ``ArrayLikeAdapter``,
  ``SequenceAdapter``, ``TFKerasTensorBoard``, ``context.env``,
  ``context.experimental.cache_train_dataset``;
- 0.2x: ``TFKerasTrialContext``, ``context.configure_fit``, ``callbacks``,
  ``load_model_from_checkpoint_path(path, tags=)``;
- 0.38: ``DeterminedCallback`` and ``TensorBoard(core_context, ...)`` for scripts that call
  ``model.fit`` themselves (``pedl.script``, imported when first used).

Importing it imports TensorFlow.
"""

from __future__ import annotations

from typing import Any

import numpy as np

from determined._unsupported import module_getattr
from determined.keras import callbacks
from pedl.keras import (
    ArrayLikeAdapter,
    EnvContext,
    InMemorySequence,
    InputData,
    KerasDataAdapter,
    SequenceAdapter,
    TFKerasContext,
    TFKerasExperimentalContext,
    TFKerasTensorBoard,
    TFKerasTrial,
    TFKerasTrialContext,
    TFKerasTrialController,
    load_model_from_checkpoint_path,
)

_ArrayLikeAdapter = ArrayLikeAdapter
"""The private name Determined's own test fixtures (``tests/experiment/tf_utils.py``, 0.12 to
0.37) build their data with: ``keras._ArrayLikeAdapter(x, y, batch_size=...)``."""

ArrayLike = np.ndarray | list[np.ndarray] | dict[str, np.ndarray]
"""Arrays a data loader may return as ``(x, y)``: an array, a list or a dict of arrays."""

__all__ = [
    "ArrayLike",
    "ArrayLikeAdapter",
    "EnvContext",
    "InMemorySequence",
    "InputData",
    "KerasDataAdapter",
    "SequenceAdapter",
    "TFKerasContext",
    "TFKerasExperimentalContext",
    "TFKerasTensorBoard",
    "TFKerasTrial",
    "TFKerasTrialContext",
    "TFKerasTrialController",
    "callbacks",
    "load_model_from_checkpoint_path",
]

_NATIVE = (
    "The Native API (det.keras.init) left Determined in 0.15: move the model into a "
    "TFKerasTrial (build_model, build_training_data_loader, build_validation_data_loader), or "
    "keep the script and run it as entrypoint: train.py with pedl.get_hyperparameter()"
)

_getattr = module_getattr(
    "determined.keras",
    forwards={
        "DeterminedCallback": "pedl.script:DeterminedCallback",
        "TFKerasTrainConfig": "pedl.keras:FitConfig",
    },
    unsupported={
        "TFKerasNativeContext": _NATIVE,
        "init": _NATIVE,
        "TFKerasNativeTrialController": _NATIVE,
    },
)


def __getattr__(name: str) -> Any:
    if name == "TensorBoard":
        # 0.38's TensorBoard(core_context, *args) belongs to the script API.
        import pedl.script

        if hasattr(pedl.script, "TensorBoard"):
            return pedl.script.TensorBoard
        return callbacks.TensorBoard
    return _getattr(name)
