"""Keras 2 mode for Determined 0.38's scripts: ``TF_USE_LEGACY_KERAS=1`` with the ``tf-keras``
package makes ``tf.keras`` Keras 2, as in the TensorFlow images Determined's examples were
written for.

A Keras 2 ``fit`` with this :class:`DeterminedCallback` is not PEDL's to intercept: it runs as
Keras 2 runs it (on several workers under the ``MultiWorkerMirroredStrategy`` that
``from_tf_config()`` gave the script), and the callback does what Determined 0.38's did,
through the Core API context (:class:`pedl.script._core_api.CoreApiRun`): training metrics
per epoch (or every N batches), validation metrics under Keras' own names (``loss``,
``categorical_accuracy``) and ``val_`` ones (``val_categorical_accuracy``) plus ``epochs``
and ``batches``, a checkpoint every ``checkpoint_epochs`` epochs and when training ends (the
chief's; the other workers save theirs and throw it away, as 0.38's did), ``should_preempt()``
checked after each epoch (pause, kill, or the searcher closing the trial stop ``fit`` there),
and a resume from the trial's latest checkpoint at the epoch after it (same ``continue_id``),
or a warm start (weights only) from another.
"""

from __future__ import annotations

import contextlib
import json
import logging
import os
import shutil
import tempfile
from typing import Any

import tensorflow as tf

from pedl import core

logger = logging.getLogger("pedl.script")

_STATE_FILE = "callback_state.json"
_WEIGHTS = "model_checkpoint"


class DeterminedCallback(tf.keras.callbacks.Callback):
    """Determined 0.38's ``DeterminedCallback`` for a Keras 2 ``fit`` (see the module
    docstring); the arguments are 0.38's."""

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
        self._core = core_context
        self._checkpoint = checkpoint
        self._continue_id = continue_id
        self._report_period = train_metrics_report_period
        self._checkpoint_epochs = checkpoint_epochs
        self._steps_completed = 0
        self._epoch = -1
        self._last_train_epoch = -1
        self._last_ckpt_epoch = -1

    # Training -----------------------------------------------------------------------------

    def on_train_begin(self, logs: dict[str, Any] | None = None) -> None:
        if self._checkpoint is not None:
            self._load(self._checkpoint)

    def on_epoch_begin(self, epoch: int, logs: dict[str, Any] | None = None) -> None:
        self._epoch = epoch

    def on_train_batch_end(self, batch: int, logs: dict[str, Any] | None = None) -> None:
        self._steps_completed += 1
        period = self._report_period
        if isinstance(period, int) and period > 0 and self._steps_completed % period == 0:
            self._report("training", {k: v for k, v in (logs or {}).items()})

    def on_epoch_end(self, epoch: int, logs: dict[str, Any] | None = None) -> None:
        if self._report_period == "epoch":
            metrics = {k: v for k, v in (logs or {}).items() if not k.startswith("val_")}
            self._report("training", metrics, epochs=epoch + 1)
        self._last_train_epoch = epoch
        if self._checkpoint_epochs > 0 and (epoch + 1) % self._checkpoint_epochs == 0:
            self._save(epoch)
        if self._core.preempt.should_preempt():
            self.model.stop_training = True

    def on_test_end(self, logs: dict[str, Any] | None = None) -> None:
        # Keras' own names, as 0.38 reports them (``categorical_accuracy``), and the ``val_``
        # names of fit's History, which 0.38's iris configs name (``val_categorical_accuracy``),
        # as PEDL's Keras 3 fit reports both.
        metrics = dict(logs or {})
        metrics.update({f"val_{k}": v for k, v in (logs or {}).items()})
        self._report("validation", metrics)

    def on_train_end(self, logs: dict[str, Any] | None = None) -> None:
        if self._last_train_epoch > self._last_ckpt_epoch:
            self._save(self._last_train_epoch)

    # Reports and checkpoints --------------------------------------------------------------

    def _report(self, kind: str, metrics: dict[str, Any], *, epochs: int | None = None) -> None:
        metrics = {k: float(v) for k, v in metrics.items() if k not in ("batch", "size")}
        metrics.setdefault("epochs", float(self._epoch + 1 if epochs is None else epochs))
        metrics.setdefault("batches", float(self._steps_completed))
        if kind == "validation":
            self._core.train.report_validation_metrics(self._steps_completed, metrics)
        else:
            self._core.train.report_training_metrics(self._steps_completed, metrics)

    def _save(self, epoch: int) -> None:
        if not self._core.distributed.is_chief:
            # As in 0.38: under MultiWorkerMirroredStrategy every worker saves the model (its
            # sum-on-read variables are read with a collective); the chief's copy is the
            # checkpoint, the others' are thrown away.
            scratch = tempfile.mkdtemp(prefix="pedl-worker-weights-")
            try:
                self.model.save_weights(os.path.join(scratch, _WEIGHTS))
            finally:
                shutil.rmtree(scratch, ignore_errors=True)
            self._last_ckpt_epoch = epoch
            return
        metadata = {"steps_completed": self._steps_completed}
        with self._core.checkpoint.store_path(metadata) as (path, _storage_id):
            self.model.save_weights(str(path / _WEIGHTS))
            state = {
                "epoch": epoch,
                "steps_completed": self._steps_completed,
                "continue_id": self._continue_id,
            }
            (path / _STATE_FILE).write_text(json.dumps(state))
        self._last_ckpt_epoch = epoch

    def _load(self, checkpoint: str) -> None:
        with self._core.checkpoint.restore_path(checkpoint) as path:
            self.model.load_weights(str(path / _WEIGHTS))
            state_file = path / _STATE_FILE
            state = json.loads(state_file.read_text()) if state_file.exists() else None
        if state is None or state["continue_id"] != self._continue_id:
            logger.info("warm start from checkpoint %s (weights only)", checkpoint)
            return
        self._steps_completed = int(state["steps_completed"])
        initial_epoch = int(state["epoch"]) + 1
        self._last_train_epoch = self._last_ckpt_epoch = int(state["epoch"])
        logger.info("resuming at epoch %d (batch %d)", initial_epoch, self._steps_completed)

        class _TrainingState:  # how Keras 2's BackupAndRestore sets fit's initial epoch
            def maybe_load_initial_epoch_from_ckpt(self, *_: Any, **__: Any) -> int:
                return initial_epoch

            def maybe_load_initial_counters_from_ckpt(
                self, *_: Any, **__: Any
            ) -> tuple[int, int]:  # tf-keras 2.16 on; checkpoints are at epoch ends
                return initial_epoch, 0

        self.model._training_state = _TrainingState()


class TensorBoard(tf.keras.callbacks.TensorBoard):
    """Determined 0.38's ``TensorBoard(core_context, ...)`` for a Keras 2 ``fit``: events go to
    the trial's TensorBoard directory; a ``log_dir`` argument is ignored."""

    def __init__(self, core_context: core.Context, *args: Any, **kwargs: Any) -> None:
        kwargs.pop("log_dir", None)
        if args:
            args = args[1:]
        get_path = getattr(core_context.train, "get_tensorboard_path", None)
        log_dir = str(get_path()) if get_path is not None else "logs"
        with contextlib.suppress(OSError):
            os.makedirs(log_dir, exist_ok=True)
        super().__init__(log_dir, *args, **kwargs)
