"""EarlyStopping that checks after each validation and survives pauses."""

from __future__ import annotations

from typing import Any

import keras

from pedl.keras.callbacks._after_validation import AfterValidation


class EarlyStopping(AfterValidation, keras.callbacks.EarlyStopping):
    """``keras.callbacks.EarlyStopping``, checked after every validation (``on_test_end``).

    Configure ``min_validation_period`` to control how often that is. Validation metrics
    carry Keras' ``val_`` prefix, as in ``fit``: the default ``monitor="val_loss"`` works.
    ``restore_best_weights`` is not supported.
    """

    state_fields = ("wait", "best", "stopped_epoch", "best_epoch")

    def __init__(self, *args: Any, **kwargs: Any) -> None:
        if kwargs.get("restore_best_weights"):
            raise ValueError(
                "pedl.keras.callbacks.EarlyStopping does not support restore_best_weights"
            )
        super().__init__(*args, **kwargs)
