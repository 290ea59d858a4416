"""ReduceLROnPlateau that checks after each validation and survives pauses."""

from __future__ import annotations

from typing import Any

import keras

from pedl.keras.callbacks._callback import Callback


class ReduceLROnPlateau(keras.callbacks.ReduceLROnPlateau, Callback):
    """``keras.callbacks.ReduceLROnPlateau``, checked after every validation (``on_test_end``).

    The learning rate itself lives in the optimizer and is checkpointed with it; this
    callback's counters are checkpointed through ``get_state``.
    """

    def __init__(self, *args: Any, **kwargs: Any) -> None:
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
            "cooldown_counter": self.cooldown_counter,
            "validations": self._validations,
        }

    def load_state(self, state: Any) -> None:
        self.wait = state["wait"]
        self.best = state["best"]
        self.cooldown_counter = state["cooldown_counter"]
        self._validations = state["validations"]
        self._state_loaded = True
