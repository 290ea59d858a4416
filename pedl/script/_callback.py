"""``DeterminedCallback``: Determined 0.38's callback for scripts that call ``model.fit``."""

from __future__ import annotations

from typing import Any

from pedl import core
from pedl.keras._keras import keras


class DeterminedCallback(keras.callbacks.Callback):
    """Give it to ``model.fit(callbacks=[...])`` in a script run by PEDL (Determined 0.38's
    contract, ``determined.keras.DeterminedCallback``).

    In a PEDL trial the script's ``fit`` is intercepted and trained in chunks like a
    TFKerasTrial, so this callback only carries its options:

    - ``checkpoint`` / ``continue_id``: PEDL always resumes a trial from its own latest
      checkpoint (``get_cluster_info().latest_checkpoint``), with every counter. A
      ``checkpoint`` that is not the trial's own, given when the trial has none yet, is a warm
      start: its weights are loaded and training starts at batch 0.
    - ``checkpoint_epochs``: with N > 0, a checkpoint every N epochs (when the experiment
      config sets no ``min_checkpoint_period``); PEDL always checkpoints when training ends or
      is paused. 0: only then.
    - ``train_metrics_report_period``: PEDL reports training metrics per chunk
      (``scheduling_unit``); the value is accepted and not used.

    Outside PEDL (the script run by hand) it does nothing: ``fit`` trains as plain Keras.
    """

    def __init__(
        self,
        core_context: core.Context,
        checkpoint: str | None,
        continue_id: int | str,
        *,
        train_metrics_report_period: int | str = "epoch",
        checkpoint_epochs: int = 1,
    ) -> None:
        super().__init__()
        if not isinstance(core_context, core.Context):
            raise TypeError(
                "DeterminedCallback needs the core context that `with pedl.core.init() as "
                f"core_context:` yields, got {type(core_context).__name__}"
            )
        if isinstance(checkpoint_epochs, bool) or not isinstance(checkpoint_epochs, int):
            raise TypeError(f"checkpoint_epochs must be an int, got {checkpoint_epochs!r}")
        if checkpoint_epochs < 0:
            raise ValueError(f"checkpoint_epochs must be >= 0, got {checkpoint_epochs}")
        self.core_context = core_context
        self.checkpoint = checkpoint
        self.continue_id = continue_id
        self.train_metrics_report_period: Any = train_metrics_report_period
        self.checkpoint_epochs = checkpoint_epochs
