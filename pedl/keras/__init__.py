"""Train tf.keras models with PEDL: the TFKerasTrial API.

It also holds the names Determined's TF-Keras API gave its users from 2020 on
(``TFKerasContext``, ``InputData``, ``ArrayLikeAdapter``, ``InMemorySequence``,
``TFKerasTensorBoard``, ``context.env``, ...), so their model definitions run unchanged.
Importing this package imports TensorFlow.
"""

from pedl.keras import callbacks
from pedl.keras._array_sequence import ArrayLikeAdapter, InMemorySequence
from pedl.keras._context import (
    FitConfig,
    TFKerasContext,
    TFKerasExperimentalContext,
    TFKerasTrialContext,
)
from pedl.keras._controller import TFKerasTrialController, TrialError
from pedl.keras._data import InputData, InvalidDataError, KerasDataAdapter, SequenceAdapter
from pedl.keras._env import EnvContext, ExperimentConfigDict
from pedl.keras._load import (
    CheckpointFormatError,
    load_model_from_checkpoint_path,
    load_tf_checkpoint_weights,
)
from pedl.keras._state import CheckpointMismatchError
from pedl.keras._trial import TFKerasTrial
from pedl.keras.callbacks import TFKerasTensorBoard

__all__ = [
    "ArrayLikeAdapter",
    "CheckpointFormatError",
    "CheckpointMismatchError",
    "EnvContext",
    "ExperimentConfigDict",
    "FitConfig",
    "InMemorySequence",
    "InputData",
    "InvalidDataError",
    "KerasDataAdapter",
    "SequenceAdapter",
    "TFKerasContext",
    "TFKerasExperimentalContext",
    "TFKerasTensorBoard",
    "TFKerasTrial",
    "TFKerasTrialContext",
    "TFKerasTrialController",
    "TrialError",
    "callbacks",
    "load_model_from_checkpoint_path",
    "load_tf_checkpoint_weights",
]
