"""``pedl.callback.Callback``: the PEDL 0.x trial callback interface.

Return instances from a legacy trial's ``callbacks(hparams)``. A "step" is one chunk of
training (at most ``scheduling_unit`` batches, the old ``batches_per_step``); ``step_id``
counts chunks from 1 over the whole trial (a resumed trial goes on counting). As in PEDL 0.x,
``on_train_step_end`` gets a list with one dict per batch of the step, each holding that
batch's own metrics (not running averages); the step's reported training metrics are their
mean.
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
        """At the end of a training step, with one metrics dict per batch of the step."""

    def on_validation_step_begin(self, step_id: int) -> None:
        """At the beginning of a validation step."""

    def on_validation_step_end(self, step_id: int, metrics: dict[str, Any]) -> None:
        """At the end of a validation step (after training step ``step_id``), with its
        metrics under Keras' ``val_`` names."""
