"""Keras' TensorBoard callback, writing where PEDL keeps the trial's TensorBoard logs."""

from __future__ import annotations

import logging
from typing import Any

from pedl.keras._keras import keras
from pedl.keras.callbacks._callback import Callback

logger = logging.getLogger("pedl.keras")


class TensorBoard(keras.callbacks.TensorBoard, Callback):
    """A thin wrapper over ``keras.callbacks.TensorBoard``.

    A ``log_dir`` argument is ignored: PEDL writes each trial's events under its own
    TensorBoard directory (``pedl tensorboard`` serves them). The batch counter survives
    pauses, so the curves of a resumed trial continue where they stopped.
    """

    def __init__(self, *args: Any, **kwargs: Any) -> None:
        kwargs.pop("log_dir", None)
        super().__init__(*args, log_dir="", **kwargs)

    def set_pedl_log_dir(self, log_dir: str) -> None:
        """Called by PEDL with the trial's TensorBoard directory, before ``set_model``."""
        self.log_dir = log_dir

    def on_train_begin(self, logs: dict[str, Any] | None = None) -> None:
        resumed_at = int(getattr(self, "_global_train_batch", 0))
        super().on_train_begin(logs)
        self._global_train_batch = resumed_at

    def get_state(self) -> Any:
        return {"global_train_batch": int(self._global_train_batch)}

    def load_state(self, state: Any) -> None:
        self._global_train_batch = state["global_train_batch"]


class TFKerasTensorBoard(TensorBoard):
    """Determined's deprecated name of :class:`TensorBoard` (same arguments)."""

    def __init__(self, *args: Any, **kwargs: Any) -> None:
        logger.warning(
            "TFKerasTensorBoard is a deprecated name for pedl.keras.callbacks.TensorBoard "
            "(determined.keras.callbacks.TensorBoard); please update your code"
        )
        super().__init__(*args, **kwargs)
