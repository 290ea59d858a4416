"""EarlyStopping that checks after each validation and survives pauses."""

from __future__ import annotations

from typing import Any

from pedl.keras._keras import keras
from pedl.keras.callbacks._after_validation import AfterValidation


class EarlyStopping(AfterValidation, keras.callbacks.EarlyStopping):
    """``keras.callbacks.EarlyStopping``, checked after every validation (``on_test_end``).

    Configure ``min_validation_period`` to control how often that is. Validation metrics
    carry Keras' ``val_`` prefix, as in ``fit``: the default ``monitor="val_loss"`` works.

    ``restore_best_weights=True``: the best weights travel in every checkpoint (they survive
    pauses and restarts); when it stops the trial the model gets them before its final
    checkpoint, and, as in Keras, when training ends the model in memory has them.
    """

    state_fields = ("wait", "best", "stopped_epoch", "best_epoch", "best_weights")

    def on_test_end(self, logs: dict[str, Any] | None = None) -> None:
        super().on_test_end(logs)
        stopping = bool(getattr(self.model, "stop_training", False)) and self.stopped_epoch > 0
        if stopping and self.restore_best_weights and self.best_weights is not None:
            self.model.set_weights(self.best_weights)
