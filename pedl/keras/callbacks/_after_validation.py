"""Running a Keras epoch-end callback after each validation instead, with its state saved."""

from __future__ import annotations

from typing import Any, ClassVar

from pedl.keras.callbacks._callback import Callback


class AfterValidation(Callback):
    """Mix in before a Keras callback whose logic lives in ``on_epoch_end``.

    That logic then runs after every validation (``on_test_end``) with the validation
    metrics under Keras' ``val_`` names; the attributes named in ``state_fields`` are saved
    in checkpoints and restored on resume, when ``on_train_begin`` no longer resets them.
    """

    state_fields: ClassVar[tuple[str, ...]] = ()

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
        state = {name: getattr(self, name) for name in self.state_fields}
        return {**state, "validations": self._validations}

    def load_state(self, state: Any) -> None:
        for name in self.state_fields:
            setattr(self, name, state[name])
        self._validations = state["validations"]
        self._state_loaded = True
