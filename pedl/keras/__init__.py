"""Train tf.keras models with PEDL: the TFKerasTrial API.

Importing this package imports TensorFlow.
"""

from pedl.keras import callbacks
from pedl.keras._context import FitConfig, TFKerasExperimentalContext, TFKerasTrialContext
from pedl.keras._controller import (
    TFKerasTrialController,
    TrialError,
    load_model_from_checkpoint_path,
)
from pedl.keras._data import InvalidDataError, KerasDataAdapter, SequenceAdapter
from pedl.keras._state import CheckpointMismatchError
from pedl.keras._trial import TFKerasTrial

__all__ = [
    "CheckpointMismatchError",
    "FitConfig",
    "InvalidDataError",
    "KerasDataAdapter",
    "SequenceAdapter",
    "TFKerasExperimentalContext",
    "TFKerasTrial",
    "TFKerasTrialContext",
    "TFKerasTrialController",
    "TrialError",
    "callbacks",
    "load_model_from_checkpoint_path",
]
