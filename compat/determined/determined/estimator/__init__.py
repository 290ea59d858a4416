"""``determined.estimator``: PEDL's EstimatorTrial (``pedl.estimator``), imported when first
used (it needs TensorFlow 2.15 with tensorflow-estimator: the ``pedl[estimator]`` extra)."""

from __future__ import annotations

import importlib
from typing import Any

from determined._unsupported import module_getattr


def _from_pedl(name: str) -> Any:
    module = importlib.import_module("pedl.estimator")
    if not hasattr(module, name):
        raise AttributeError(f"module 'determined.estimator' has no attribute {name!r}")
    return getattr(module, name)


_getattr = module_getattr("determined.estimator", fallback=_from_pedl)


def __getattr__(name: str) -> Any:
    return _getattr(name)
