"""One line for Keras 2 code that fails under Keras 3, saying how to switch to Keras 2.

Determined's TF-Keras code was written for TensorFlow <= 2.15, whose ``tf.keras`` was Keras 2.
Under Keras 3 some of it fails with Keras' own, longer errors: ``tf.keras.optimizers.legacy``,
an optimizer's ``lr=`` argument, metrics given to ``model.compile`` positionally (Keras 3
reads the third positional argument as ``loss_weights``). Such a trial's failure summary says
instead what the code used and that ``TF_USE_LEGACY_KERAS=1`` runs it on Keras 2.
"""

from __future__ import annotations

import re
from typing import Any

SWITCH = (
    "set TF_USE_LEGACY_KERAS=1 in environment.environment_variables to run it on Keras 2 (tf-keras)"
)

_UNRECOGNIZED = re.compile(r"Argument\(s\) not recognized: \{(.*)\}")


def keras2_only_api(error: BaseException) -> str | None:
    """The one-line message for ``error`` when it is Keras 3 refusing a Keras-2-only API,
    else None."""
    text = str(error)
    if isinstance(error, ImportError) and "optimizers.legacy` is not supported" in text:
        return f"tf.keras.optimizers.legacy is Keras 2 code and this trial runs Keras 3: {SWITCH}"
    found = _UNRECOGNIZED.search(text)
    if isinstance(error, ValueError) and found and "'lr'" in found.group(1):
        return (
            "an optimizer's lr= argument is Keras 2 code (Keras 3 names it learning_rate=) and "
            f"this trial runs Keras 3: {SWITCH}"
        )
    return None


def positional_metrics(loss_weights: Any) -> str | None:
    """The one-line message when a Keras 3 model's ``loss_weights`` hold metric names: the
    metrics of a Keras 2 ``model.compile(optimizer, loss, [metrics])``; else None."""
    values = list(loss_weights.values()) if isinstance(loss_weights, dict) else loss_weights
    if not isinstance(values, list | tuple) or not any(isinstance(v, str) for v in values):
        return None
    return (
        f"model.compile() got {list(values)!r} as its third positional argument, which Keras 3 "
        "reads as loss_weights (Keras 2 read it as metrics): pass metrics=[...], or "
        f"{SWITCH}"
    )
