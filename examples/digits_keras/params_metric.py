"""The model's parameter count as a Keras metric, so that a multi-objective search
(``pareto.yaml``) can trade validation accuracy against model size."""

from __future__ import annotations

from typing import Any

import keras


class ParameterCount(keras.metrics.Metric):
    """Reports ``count`` (the model's trainable and non-trainable parameters) every batch:
    ``params`` in training, ``val_params`` in validation."""

    def __init__(self, count: int, name: str = "params", **kwargs: Any) -> None:
        super().__init__(name=name, **kwargs)
        self.count = int(count)

    def update_state(self, y_true: Any, y_pred: Any, sample_weight: Any = None) -> None:
        return None

    def result(self) -> Any:
        return keras.ops.convert_to_tensor(float(self.count))

    def reset_state(self) -> None:
        return None

    def get_config(self) -> dict[str, Any]:
        return {**super().get_config(), "count": self.count}
