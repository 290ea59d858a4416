"""EarlyStopping that checks after each validation and survives pauses."""

from __future__ import annotations

from typing import Any

import keras

from pedl.keras.callbacks._callback import Callback


class EarlyStopping(keras.callbacks.EarlyStopping, Callback):
    """``keras.callbacks.EarlyStopping``, checked after every validation (``on_test_end``).

    Configure ``min_validation_period`` to control how often that is. Validation metrics
    carry Keras' ``val_`` prefix, as in ``fit``: the default ``monitor="val_loss"`` works.
    ``restore_best_weights`` is not supported.
    """

    def __init__(self, *args: Any, **kwargs: Any) -> None:
        if kwargs.get("restore_best_weights"):
            raise ValueError(
                "pedl.keras.callbacks.EarlyStopping does not support restore_best_weights"
            )
        super().__init__(*args, **kwargs)
        self._validations = 0
        self._state_loaded = False

    def on_train_begin(self, logs: dict[str, Any] | None = None) -> None:
        if not self._state_loaded:
            super().on_train_begin(logs)

    def on_epoch_end(self, epoch: int, logs: dict[str, Any] | None = None) -> None:
        pass

    def on_test_end(self, logs: dict[str, Any] | None = None) -> None:
        val_logs = {f"val_{k}": v for k, v in (logs or {}).items()}
        super().on_epoch_end(self._validations, val_logs)
        self._validations += 1

    def get_state(self) -> Any:
        return {
            "wait": self.wait,
            "best": self.best,
            "stopped_epoch": self.stopped_epoch,
            "best_epoch": self.best_epoch,
            "validations": self._validations,
        }

    def load_state(self, state: Any) -> None:
        self.wait = state["wait"]
        self.best = state["best"]
        self.stopped_epoch = state["stopped_epoch"]
        self.best_epoch = state["best_epoch"]
        self._validations = state["validations"]
        self._state_loaded = True
