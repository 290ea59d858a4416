"""TensorBoard for experiments and trials: the master's TensorBoard processes, fed from the
database (the trials' metrics as scalars) and from their checkpoint storage (the event files
the trials wrote); see :mod:`._manager`."""

from pedl.master.tensorboard._events import TAG_PREFIX, ScalarEventFile, scalar_tag, scalars
from pedl.master.tensorboard._manager import (
    KEY_HEADER,
    LOG_LINES_KEPT,
    MAX_TENSORBOARDS,
    MAX_TRIALS,
    PATH_PREFIX,
    TensorBoard,
    TensorBoardError,
    TensorBoardManager,
    TensorBoardState,
    TrialSource,
)

__all__ = [
    "KEY_HEADER",
    "LOG_LINES_KEPT",
    "MAX_TENSORBOARDS",
    "MAX_TRIALS",
    "PATH_PREFIX",
    "TAG_PREFIX",
    "ScalarEventFile",
    "TensorBoard",
    "TensorBoardError",
    "TensorBoardManager",
    "TensorBoardState",
    "TrialSource",
    "scalar_tag",
    "scalars",
]
