"""``pedl.callback.Callback``: the PEDL 0.x trial callback interface.

Return instances from a legacy trial's ``callbacks(hparams)``. A "step" is one chunk of
training (at most ``scheduling_unit`` batches, the old ``batches_per_step``); ``step_id``
counts chunks from 1. PEDL 0.x passed one dict per batch to ``on_train_step_end``; PEDL now
passes one dict with the metrics averaged over the chunk.
"""

from __future__ import annotations

from typing import Any


class Callback:
    """Override any of these; they are called in the order the callbacks were listed."""

    def on_trial_begin(self) -> None:
        """Before the first training step of the trial (not again after a resume)."""

    def on_train_step_begin(self, step_id: int) -> None:
        """At the beginning of a training step."""

    def on_train_step_end(self, step_id: int, metrics: list[dict[str, Any]]) -> None:
        """At the end of a training step, with its metrics."""

    def on_validation_step_begin(self, step_id: int) -> None:
        """At the beginning of a validation step."""

    def on_validation_step_end(self, step_id: int, metrics: dict[str, Any]) -> None:
        """At the end of a validation step, with its metrics."""
