"""Keras's own callbacks in a script's ``fit``, called as plain Keras calls them and resumed
exactly across pauses and restarts.

PEDL trains a script's ``fit`` in chunks (:class:`pedl.keras.TFKerasTrialController`), whose
callback hooks follow PEDL's schedule: a PEDL :class:`~pedl.keras.callbacks.Callback` gets
epochs of ``records_per_epoch`` with empty logs, and one ``on_train_begin`` per process. The
script's other callbacks (``ModelCheckpoint``, ``EarlyStopping``, ``ReduceLROnPlateau``,
``CSVLogger``, ``TensorBoard``, ``LearningRateScheduler``, a user's own) expect Keras's
``fit``; :class:`KerasCallbacks` stands between them and the controller, one PEDL callback that
calls them as ``fit`` would:

- epochs of the call's data (``steps_per_epoch``, or one pass over it), numbered from 0 for
  each ``fit`` call, ``on_epoch_end`` with the epoch's logs: its training metrics (the values
  ``History`` gets) and, where the epoch validates (every ``validation_freq`` epochs), its
  validation metrics under ``val_`` names; what a callback adds to the logs
  (``learning_rate``) goes into ``History`` too, as in Keras;
- ``on_train_begin`` once per ``fit`` call and ``on_train_end`` once when it returns (not when
  the trial is paused); ``on_test_*`` around each validation; batch hooks with the batch's
  index in its epoch;
- at every checkpoint each callback's state is kept: its attributes that are plain data
  (counters, ``best``, ``best_weights``, the learning rate's ``wait``/``cooldown``), the
  contents of the file a ``CSVLogger`` writes and of the files a ``ModelCheckpoint`` saved.
  Resumed (after a pause, a kill, on another machine), each callback begins again
  (``on_train_begin``: its files and writers opened, a ``CSVLogger`` appending to its file as
  the checkpoint left it) and gets that state back, so a resumed ``fit`` ends as an
  uninterrupted one: the same rows in the CSV file, the same best model at the
  ``ModelCheckpoint``'s path, the same learning rate and early stop.

``BackupAndRestore`` is left out: PEDL's checkpoints resume the ``fit`` exactly, and its own
restore would fight them (a log line says so).

Where an epoch's end is not a chunk boundary (``validation_freq`` > 1 and epochs longer than
``scheduling_unit``), its ``on_epoch_end`` comes at the end of the chunk it ends in, after the
next epoch's ``on_epoch_begin``.
"""

from __future__ import annotations

import contextlib
import logging
import math
import os
from collections.abc import Callable, Mapping
from pathlib import Path
from typing import Any

import numpy as np

from pedl.keras._keras import keras
from pedl.keras.callbacks import Callback
from pedl.script._stages import EpochHistory

logger = logging.getLogger("pedl.script")

_NOT_STATE = frozenset({"model", "_model", "params", "validation_data"})
"""Attributes of a Keras callback that are not its state (set by ``fit``, or the model)."""
_CSV_NOT_STATE = frozenset({"append", "append_header", "csv_file", "writer"})
"""CSVLogger's attributes that its ``on_train_begin`` sets from the file (see :func:`_begin`)."""


def _comparisons() -> dict[str, Any]:
    """The comparison functions Keras's monitoring callbacks keep in ``monitor_op``, by name
    (kept by name in a checkpoint: ``_set_monitor_op`` negates ``min_delta`` each time it runs)."""
    found: dict[str, Any] = {"np.less": np.less, "np.greater": np.greater}
    ops = getattr(keras, "ops", None)
    if ops is not None:
        found.update({"ops.less": ops.less, "ops.greater": ops.greater})
    return found


def _plain(value: Any) -> bool:
    """Whether ``value`` is data a checkpoint can keep as it is (no model, file or writer)."""
    if value is None or isinstance(value, (bool, int, float, str, bytes, np.ndarray, np.generic)):
        return True
    if isinstance(value, (list, tuple)):
        return all(_plain(v) for v in value)
    if isinstance(value, dict):
        return all(isinstance(k, str) and _plain(v) for k, v in value.items())
    return False


def callback_state(callback: Any, saved_files: set[str]) -> dict[str, Any]:
    """What a resumed run needs of ``callback`` (see the module docstring): its plain-data
    attributes, its comparison by name, and the files it wrote (``saved_files``, and a
    ``CSVLogger``'s file) as they are now."""
    skip = _NOT_STATE | (
        _CSV_NOT_STATE if isinstance(callback, keras.callbacks.CSVLogger) else set()
    )
    attributes: dict[str, Any] = {}
    comparisons: dict[str, str] = {}
    names = {id(f): name for name, f in _comparisons().items()}
    for name, value in vars(callback).items():
        if name in skip:
            continue
        if _plain(value):
            attributes[name] = value
        elif id(value) in names:
            comparisons[name] = names[id(value)]
    files = set(saved_files)
    if isinstance(callback, keras.callbacks.CSVLogger):
        with contextlib.suppress(AttributeError, ValueError):
            if callback.csv_file is not None:
                callback.csv_file.flush()
        files.add(callback.filename)
    contents = {}
    for path in sorted(files):
        with contextlib.suppress(FileNotFoundError, IsADirectoryError):
            contents[path] = Path(path).read_bytes()
    return {"attributes": attributes, "comparisons": comparisons, "files": contents}


def restore_callback(callback: Any, state: Mapping[str, Any]) -> None:
    """Give ``callback`` the state :func:`callback_state` took (its files written back)."""
    comparisons = _comparisons()
    for name, value in state["attributes"].items():
        setattr(callback, name, value)
    for name, which in state["comparisons"].items():
        setattr(callback, name, comparisons[which])


def restore_files(state: Mapping[str, Any]) -> None:
    """Write the files of a callback's state back where it wrote them."""
    for path, content in state["files"].items():
        target = Path(path)
        target.parent.mkdir(parents=True, exist_ok=True)
        target.write_bytes(content)


def _begin(callback: Any, state: Mapping[str, Any] | None) -> None:
    """``on_train_begin`` of ``callback``, and where the fit resumes, its state back: its
    files first (a ``CSVLogger`` opens its file to append to the rows the checkpoint kept)."""
    if state is None:
        callback.on_train_begin()
        return
    restore_files(state)
    if isinstance(callback, keras.callbacks.CSVLogger):
        append = callback.append
        callback.append = True
        try:
            callback.on_train_begin()
        finally:
            callback.append = append
    else:
        callback.on_train_begin()
    restore_callback(callback, state)


def _suspend(callback: Any) -> None:
    """A paused fit's callback lets go of its files and writers (it resumes in another run)."""
    if isinstance(callback, keras.callbacks.CSVLogger) and callback.csv_file is not None:
        callback.csv_file.close()
        callback.csv_file = None
    close = getattr(callback, "_close_writers", None)
    if isinstance(callback, keras.callbacks.TensorBoard) and callable(close):
        close()


class KerasCallbacks(Callback):
    """The script's Keras callbacks of one ``fit`` call, as one PEDL callback (see the module
    docstring).

    ``steps_per_epoch`` is the call's epoch in batches (None: unknown, each validation ends
    one), ``epochs`` and ``verbose`` the call's (the callbacks' ``params``),
    ``validation_period`` the stage's validation period in batches (0: none), ``history``
    the stage's :class:`EpochHistory`, whose epochs' training metrics the epochs' logs are.
    """

    def __init__(
        self,
        callbacks: list[Any],
        *,
        steps_per_epoch: int | None,
        epochs: int,
        verbose: Any,
        validation_period: int,
        history: EpochHistory,
    ) -> None:
        super().__init__()
        self.callbacks = [cb for cb in callbacks if not _is_backup(cb)]
        if len(self.callbacks) < len(callbacks):
            logger.info(
                "BackupAndRestore is not used in a PEDL trial: PEDL's checkpoints resume the "
                "fit exactly (pause, kill, another machine)"
            )
        self._per_epoch = steps_per_epoch
        self._keras_params = {"verbose": verbose, "epochs": epochs, "steps": steps_per_epoch}
        self._period = validation_period
        self._history = history
        self._count = 0
        """Batches trained in this fit call."""
        self._epoch = 0
        """The epoch training is in (or the next one, between epochs)."""
        self._epoch_open = False
        self._pending: list[int] = []
        """Epochs whose last batch trained and whose ``on_epoch_end`` is still to come."""
        self._last_validation = 0
        self._begun = False
        self._ended = False
        self._loaded: list[dict[str, Any]] | None = None
        self._saved_files: list[set[str]] = [set() for _ in self.callbacks]
        for index, callback in enumerate(self.callbacks):
            self._track_saves(index, callback)

    def __bool__(self) -> bool:
        return bool(self.callbacks)

    def _track_saves(self, index: int, callback: Any) -> None:
        """Note the paths a ``ModelCheckpoint`` saves to, to keep those files in checkpoints."""
        if not isinstance(callback, keras.callbacks.ModelCheckpoint):
            return
        save: Callable[..., Any] | None = getattr(callback, "_save_model", None)
        path_of: Callable[..., str] | None = getattr(callback, "_get_file_path", None)
        if save is None or path_of is None:
            return
        saved = self._saved_files[index]

        def tracked(epoch: Any, batch: Any, logs: Any) -> Any:
            result = save(epoch, batch, logs)
            path = path_of(epoch, batch, logs)
            if os.path.isfile(path):
                saved.add(path)
            return result

        callback._save_model = tracked

    # Keras's calls ---------------------------------------------------------------------

    def set_model(self, model: Any) -> None:
        super().set_model(model)
        for callback in self.callbacks:
            callback.set_model(model)

    def set_params(self, params: Any) -> None:
        super().set_params(params)
        for callback in self.callbacks:
            callback.set_params(dict(self._keras_params))

    def _each(self, hook: str, *args: Any) -> None:
        for callback in self.callbacks:
            getattr(callback, hook)(*args)

    def _ensure_begun(self) -> None:
        if self._begun:
            return
        self._begun = True
        states: list[dict[str, Any] | None] = [None] * len(self.callbacks)
        if self._loaded is not None:
            states = list(self._loaded)
        for callback, state in zip(self.callbacks, states, strict=True):
            _begin(callback, state)

    def on_train_begin(self, logs: dict[str, Any] | None = None) -> None:
        """Deferred to the first call after it: a resumed trial's state arrives in between
        (``load_state``)."""

    def on_train_batch_begin(self, batch: int, logs: dict[str, Any] | None = None) -> None:
        self._ensure_begun()
        if not self._epoch_open:
            self._epoch_open = True
            self._each("on_epoch_begin", self._epoch)
        index = self._count % self._per_epoch if self._per_epoch else self._count
        self._each("on_train_batch_begin", index, logs)

    def on_train_batch_end(self, batch: int, logs: dict[str, Any] | None = None) -> None:
        index = self._count % self._per_epoch if self._per_epoch else self._count
        self._count += 1
        self._each("on_train_batch_end", index, logs)
        if self._per_epoch and self._count % self._per_epoch == 0:
            self._close_epoch()

    def _close_epoch(self) -> None:
        self._epoch_open = False
        self._pending.append(self._epoch)
        self._epoch += 1

    def on_train_workload_end(self, total_batches_trained: int, logs: dict[str, Any]) -> None:
        """After a chunk's training metrics: an epoch that ended in it and does not validate
        now ends."""
        if self._pending and not self._validation_due():
            self._end_epochs(None)

    def _validation_due(self) -> bool:
        return self._period > 0 and self._count - self._last_validation >= self._period

    def on_test_begin(self, logs: dict[str, Any] | None = None) -> None:
        self._ensure_begun()
        self._each("on_test_begin", logs)

    def on_test_batch_begin(self, batch: int, logs: dict[str, Any] | None = None) -> None:
        self._each("on_test_batch_begin", batch, logs)

    def on_test_batch_end(self, batch: int, logs: dict[str, Any] | None = None) -> None:
        self._each("on_test_batch_end", batch, logs)

    def on_test_end(self, logs: dict[str, Any] | None = None) -> None:
        self._each("on_test_end", logs)
        self._last_validation = self._count
        if not self._per_epoch and self._count > 0 and self._epoch_open:
            self._close_epoch()  # an epoch of unknown length: each validation ends one
        if self._pending:
            validation = {f"val_{k}": float(v) for k, v in (logs or {}).items()}
            self._end_epochs(validation)

    def _end_epochs(self, validation: dict[str, float] | None) -> None:
        """``on_epoch_end`` of the pending epochs, the last with ``validation``'s metrics."""
        pending, self._pending = self._pending, []
        for epoch in pending:
            logs = dict(self._history.epoch_training(epoch))
            if validation is not None and epoch == pending[-1]:
                logs.update(validation)
            known = set(logs)
            self._each("on_epoch_end", epoch, logs)
            added = {
                k: float(v)
                for k, v in logs.items()
                if k not in known
                and isinstance(v, (int, float, np.number))
                and math.isfinite(float(v))
            }
            if added:
                self._history.add(added)

    def on_train_end(self, logs: dict[str, Any] | None = None) -> None:
        """Not the fit call's end (a pause ends a process too): see :meth:`end`."""

    # PEDL's calls ----------------------------------------------------------------------

    def end(self) -> None:
        """The ``fit`` call returns: the epochs still pending end, then ``on_train_end``."""
        if self._ended:
            return
        self._ended = True
        self._ensure_begun()
        if self._pending:
            self._end_epochs(None)
        self._each("on_train_end", None)

    def suspend(self) -> None:
        """The trial is paused in this ``fit`` call: files and writers are let go."""
        for callback in self.callbacks:
            _suspend(callback)

    def get_state(self) -> Any:
        return {
            "count": self._count,
            "epoch": self._epoch,
            "epoch_open": self._epoch_open,
            "pending": list(self._pending),
            "last_validation": self._last_validation,
            "callbacks": self.callback_states(),
        }

    def callback_states(self) -> list[dict[str, Any]]:
        """Each callback's state (see :func:`callback_state`)."""
        return [
            {**callback_state(cb, saved), "saved_files": sorted(saved)}
            for cb, saved in zip(self.callbacks, self._saved_files, strict=True)
        ]

    def load_state(self, state: Any) -> None:
        states = state["callbacks"]
        if len(states) != len(self.callbacks):
            raise ValueError(
                f"the checkpoint has the state of {len(states)} Keras callbacks of this fit "
                f"call, but the script gave it {len(self.callbacks)}: give fit the same "
                "callbacks when the trial resumes"
            )
        self._count = state["count"]
        self._epoch = state["epoch"]
        self._epoch_open = state["epoch_open"]
        self._pending = list(state["pending"])
        self._last_validation = state["last_validation"]
        self._loaded = states
        for saved, cb_state in zip(self._saved_files, states, strict=True):
            saved.update(cb_state["saved_files"])


def restore_ended(callbacks: list[Any], states: list[dict[str, Any]]) -> None:
    """Give the callbacks of a ``fit`` call that ended before the trial resumed the state they
    had when it returned (their files written back); see ``ScriptRun._replay``."""
    kept = [cb for cb in callbacks if not _is_backup(cb)]
    if len(kept) != len(states):
        raise ValueError(
            f"the checkpoint has the state of {len(states)} Keras callbacks of this fit call, "
            f"but the script gave it {len(kept)}: give fit the same callbacks when the trial "
            "resumes"
        )
    for callback, state in zip(kept, states, strict=True):
        restore_files(state)
        restore_callback(callback, state)


def _is_backup(callback: Any) -> bool:
    backup = getattr(keras.callbacks, "BackupAndRestore", None)
    return backup is not None and isinstance(callback, backup)
