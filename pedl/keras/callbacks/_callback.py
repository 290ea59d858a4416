"""The PEDL Keras callback: Keras' hooks plus state and chunk hooks."""

from __future__ import annotations

from typing import Any

from pedl.keras._keras import keras


class Callback(keras.callbacks.Callback):
    """A Keras callback that also knows about PEDL's chunks and checkpoints.

    How PEDL calls Keras hooks differs from a plain ``fit()`` in two documented ways:

    - ``on_epoch_begin``/``on_epoch_end`` follow ``records_per_epoch`` of the experiment
      config (not the length of the data), and ``on_epoch_end`` gets empty logs, since
      validation is scheduled by ``min_validation_period``, not by epochs;
    - a trial process looks like one long ``fit()``: ``on_train_begin`` once when the
      process starts training (fresh or resumed from a checkpoint), ``on_train_end`` once
      when it stops; ``on_test_begin``/``on_test_end`` around each validation, between
      chunks. After a resume in the middle of an epoch, ``on_epoch_begin`` is called again
      for that epoch before its next batch.

    Callbacks with state that must survive a pause implement ``get_state``/``load_state``:
    ``load_state`` is called before ``on_train_begin`` of the resumed process.
    """

    def get_state(self) -> Any:
        """A picklable object with this callback's state, saved in every checkpoint."""
        return None

    def load_state(self, state: Any) -> None:
        """Restore the object ``get_state`` returned, when training resumes."""

    def on_checkpoint_end(self, checkpoint_dir: str) -> None:
        """Called after PEDL wrote a checkpoint; files added to ``checkpoint_dir`` are kept."""

    def on_train_workload_begin(
        self, total_batches_trained: int, batches_requested: int | None, logs: dict[str, Any]
    ) -> None:
        """Called before a chunk of at most ``scheduling_unit`` batches."""

    def on_train_workload_end(self, total_batches_trained: int, logs: dict[str, Any]) -> None:
        """Called after a chunk, with the training metrics averaged over it."""
