"""PEDL: a training platform for TensorFlow and Keras."""

from typing import Any

from pedl._trial import Trial, TrialController
from pedl.engine import InvalidHP, TrialOutcome

__version__ = "0.1.0"

__all__ = [
    "InvalidHP",
    "Trial",
    "TrialController",
    "TrialOutcome",
    "__version__",
    "get_hyperparameter",
]


def __getattr__(name: str) -> Any:
    # Lazy: `import pedl` stays light (pedl.script imports the core context and the config).
    if name == "get_hyperparameter":
        from pedl.script import get_hyperparameter

        return get_hyperparameter
    raise AttributeError(f"module 'pedl' has no attribute {name!r}")
