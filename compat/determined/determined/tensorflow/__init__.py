"""``determined.tensorflow``: PEDL's TensorFlowTrial (``pedl.frameworks.tensorflow``,
``pedl.tensorflow``) and the checkpoint loader, imported when first used."""

from __future__ import annotations

import importlib
from typing import Any

from determined._unsupported import UnsupportedFeatureError, module_getattr

_HOMES = ("pedl.tensorflow", "pedl.frameworks.tensorflow")


def _from_pedl(name: str) -> Any:
    for home in _HOMES:
        try:
            module = importlib.import_module(home)
        except ModuleNotFoundError as e:
            if e.name is not None and home.startswith(e.name):
                continue
            raise
        if hasattr(module, name):
            return getattr(module, name)
    raise UnsupportedFeatureError(
        f"determined.tensorflow.{name}",
        f"This PEDL installation has no {name} in {' or '.join(_HOMES)}",
    )


_getattr = module_getattr(
    "determined.tensorflow",
    forwards={"load_model": "pedl.keras:load_model_from_checkpoint_path"},
    fallback=_from_pedl,
)


def __getattr__(name: str) -> Any:
    return _getattr(name)
