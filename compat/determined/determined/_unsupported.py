"""How the compatibility package says that a Determined feature is not part of PEDL."""

from __future__ import annotations

import importlib
from collections.abc import Callable, Mapping
from typing import Any

GUIDE = "docs/migrating-from-determined.md"


class UnsupportedFeatureError(NotImplementedError):
    """A Determined feature that PEDL does not provide; the message names what to use."""

    def __init__(self, feature: str, alternative: str) -> None:
        super().__init__(
            f"{feature} is a Determined feature that PEDL does not provide. {alternative} "
            f"(see {GUIDE} in PEDL)"
        )
        self.feature = feature
        self.alternative = alternative


def module_getattr(
    module: str,
    *,
    forwards: Mapping[str, str] = {},
    unsupported: Mapping[str, str] = {},
    fallback: Callable[[str], Any] | None = None,
) -> Callable[[str], Any]:
    """A module ``__getattr__``: ``forwards`` maps a name to ``"pedl.module:attribute"``
    (imported when first used), ``unsupported`` a Determined name to the PEDL alternative;
    ``fallback`` may resolve other names. Anything else is an AttributeError naming the module."""

    def __getattr__(name: str) -> Any:
        if name in forwards:
            return _resolve(f"{module}.{name}", forwards[name])
        if name in unsupported:
            raise UnsupportedFeatureError(f"{module}.{name}", unsupported[name])
        if fallback is not None and not name.startswith("__"):
            return fallback(name)
        raise AttributeError(
            f"module {module!r} has no attribute {name!r} (PEDL's compatibility package for "
            f"Determined; see {GUIDE})"
        )

    return __getattr__


def _resolve(feature: str, target: str) -> Any:
    """Import ``"module:attribute"`` (or a module); a part of PEDL missing from this
    installation is reported as such. An ImportError raised by the module itself (e.g.
    ``pedl.estimator`` without TensorFlow 2.15) propagates: its message says what to install."""
    target_module, _, attribute = target.partition(":")
    try:
        value = importlib.import_module(target_module)
    except ModuleNotFoundError as e:
        if e.name is None or not target_module.startswith(e.name):
            raise
        raise UnsupportedFeatureError(
            feature, f"This PEDL installation has no {target_module} (upgrade PEDL)"
        ) from e
    if not attribute:
        return value
    if not hasattr(value, attribute):
        raise UnsupportedFeatureError(
            feature, f"This PEDL installation has no {target_module}.{attribute} (upgrade PEDL)"
        )
    return getattr(value, attribute)
