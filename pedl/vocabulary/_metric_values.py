"""How a metric value that is not a finite number travels and is stored: JSON has no literal
for NaN or the infinities, so they are the strings ``"NaN"``, ``"Infinity"`` and
``"-Infinity"`` everywhere (a trial's reports, the database, the REST API, the SDK,
TensorBoard's event files, the web UI). The one rule in Python; ``ui/src/api.ts`` has the
TypeScript one."""

from __future__ import annotations

import math
from collections.abc import Mapping
from typing import Any

NON_FINITE_NAMES = ("NaN", "Infinity", "-Infinity")
_VALUES = {"NaN": math.nan, "Infinity": math.inf, "-Infinity": -math.inf}


def encode_metric_value(value: Any) -> Any:
    """``value`` as JSON can carry it: a non-finite float as its string; anything else as
    it is."""
    if isinstance(value, float) and not math.isfinite(value):
        if math.isnan(value):
            return "NaN"
        return "Infinity" if value > 0 else "-Infinity"
    return value


def encode_metric_values(value: Any) -> Any:
    """:func:`encode_metric_value` through mappings (keys as strings), lists and tuples."""
    if isinstance(value, Mapping):
        return {str(k): encode_metric_values(v) for k, v in value.items()}
    if isinstance(value, list | tuple):
        return [encode_metric_values(v) for v in value]
    return encode_metric_value(value)


def decode_metric_value(value: Any) -> Any:
    """The float a non-finite value's string stands for; anything else as it is."""
    if isinstance(value, str):
        return _VALUES.get(value, value)
    return value
