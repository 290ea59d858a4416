"""PEDL: a training platform for TensorFlow and Keras."""

from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from pedl._trial import Trial, TrialController
    from pedl.script import get_hyperparameter
    from pedl.vocabulary import InvalidHP, TrialOutcome

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
    # Lazy: `import pedl` (and so every `pedl.*` import, the command's included) stays light
    # and cannot fail on what pedl.config reads from the environment; the names are imported
    # when first used (pedl.script imports the core context and the config).
    if name in ("Trial", "TrialController"):
        from pedl import _trial

        return getattr(_trial, name)
    if name in ("InvalidHP", "TrialOutcome"):
        from pedl import vocabulary

        return getattr(vocabulary, name)
    if name == "get_hyperparameter":
        from pedl.script import get_hyperparameter

        return get_hyperparameter
    raise AttributeError(f"module 'pedl' has no attribute {name!r}")
