"""The stages of a script's trial: each ``model.fit`` call of one script is a stage of it.

A script may call ``fit`` several times (keras.io's fine-tuning: train the head, unfreeze,
recompile, ``fit`` again). Each call is trained by its own :class:`TFKerasTrialController`,
whose counters start at 0; this module places the stages on the trial's one line of batches:

- :class:`StageLengths` is a stage's searcher session, in the stage's own batches: up to the
  searcher's next length (shared by the stages through :class:`SearcherLengths`) less the
  batches the earlier stages trained, and no further than the stage's own length where it
  has one (the call's ``epochs``);
- :class:`EpochHistory` keeps the stage's metrics as Keras's ``History`` holds them (one
  value per epoch), and its state goes into every checkpoint;
- :class:`StageCheckpoints` stores the stage's checkpoints with the trial's batch count
  (``steps_completed``), the stage's number (``script_stage`` in the metadata) and, under
  ``script/``, what a resumed run needs to replay the earlier stages: each one's trained
  batches and History, and its end state (model and optimizer variables, random generators)
  as the script saw it when its ``fit`` returned.
"""

from __future__ import annotations

import contextlib
import json
import shutil
from collections.abc import Callable, Iterator, Mapping
from pathlib import Path
from typing import Any

from pedl import core
from pedl.core import SearcherSession

STATE_DIR = "script"
"""The directory of a script trial's checkpoint that holds its stages (see the module)."""
STATE_FILE = "stages.json"
STAGE_METADATA = "script_stage"
"""The checkpoint metadata key of the stage (the fit call's number, 1 for the first)."""


def snapshot_dir(index: int) -> str:
    """The directory (under :data:`STATE_DIR`) of the end state of stage ``index`` (from 0)."""
    return f"stage_{index + 1}"


class SearcherLengths:
    """The searcher's lengths (in its unit), read once and shared by the stages: a length a
    stage did not reach is the next stage's target too."""

    def __init__(self, session: SearcherSession) -> None:
        self._session = session
        self._pending: int | None = None
        self.exhausted = False
        """True once the searcher has no more length for the trial."""

    def target(self) -> int | None:
        if self._pending is None and not self.exhausted:
            self._pending = self._session.next_length()
            self.exhausted = self._pending is None
        return self._pending

    def complete(self, searcher_metric: float) -> None:
        assert self._pending is not None
        self._session.complete(self._pending, searcher_metric)
        self._pending = None


class StageLengths:
    """One stage's searcher session, in its own batches (see the module docstring).

    ``lengths`` is None where the searcher has no max_length: the stage trains its own
    length (``own``), and the trial's open-ended operation is left to the end of the script.
    """

    def __init__(
        self,
        lengths: SearcherLengths | None,
        *,
        offset: int,
        own: int | None,
        to_batches: Callable[[int], int],
    ) -> None:
        if lengths is None and own is None:
            raise ValueError("a stage needs the searcher's lengths or its own")
        self._lengths = lengths
        self._offset = offset
        self._own = own
        self._to_batches = to_batches
        self._own_target = False
        self.completed = False
        """True once the stage trained its own length."""

    def next_length(self) -> int | None:
        if self.completed:
            return None
        if self._lengths is None:
            return self._own
        target = self._lengths.target()
        if target is None:
            return None
        local = self._to_batches(target) - self._offset
        self._own_target = self._own is not None and self._own < local
        return self._own if self._own_target and self._own is not None else local

    def complete(self, length: int, searcher_metric: float) -> None:
        if self._lengths is None or self._own_target:
            self.completed = True
            return
        self._lengths.complete(searcher_metric)


class EpochHistory:
    """A stage's metrics as Keras's ``History`` keeps them: per epoch of the call's data,
    the training metrics (the mean of the chunks' reports over the epoch's batches) and the
    validation metrics of a validation at the epoch's end; a last partial epoch (a stage cut
    by the searcher's length) counts as one. Where an epoch's length is unknown, every
    report is one entry. Counts are the stage's own batches."""

    def __init__(self, batches_per_epoch: int | None) -> None:
        self.per_epoch = batches_per_epoch
        self.history: dict[str, list[float]] = {}
        self._sums: dict[str, float] = {}
        self._count = 0
        self._last = 0
        self._pending: tuple[int, dict[str, float]] | None = None
        self._epoch_training: dict[int, dict[str, float]] = {}
        """The training metrics of epochs closed and not yet read by :meth:`epoch_training`."""
        self._last_training: dict[str, float] = {}

    def start_at(self, batches: int) -> None:
        """Count on from ``batches`` (a resumed stage whose earlier epochs are not known)."""
        self._last = batches

    def _append(self, metrics: Mapping[str, float]) -> None:
        for name, value in metrics.items():
            self.history.setdefault(name, []).append(value)

    def training(self, batches: int, metrics: Mapping[str, float]) -> None:
        per_epoch = self.per_epoch
        if per_epoch is None:
            self._append(metrics)
            self._last_training = dict(metrics)
            self._last = batches
            return
        position = self._last
        while position < batches:
            epoch_end = (position // per_epoch + 1) * per_epoch
            end = min(batches, epoch_end)
            n = end - position
            for name, value in metrics.items():
                self._sums[name] = self._sums.get(name, 0.0) + value * n
            self._count += n
            if end == epoch_end:
                self._close_epoch(epoch_end // per_epoch - 1)
            position = end
        self._last = batches

    def _close_epoch(self, epoch: int | None = None) -> None:
        means = {name: total / self._count for name, total in self._sums.items()}
        self._append(means)
        self._last_training = means
        if epoch is not None:
            self._epoch_training[epoch] = means
        self._sums, self._count = {}, 0

    def epoch_training(self, epoch: int) -> dict[str, float]:
        """The training metrics of the stage's epoch ``epoch`` (from 0), as its History entry
        has them, once it closed (where an epoch's length is unknown: the latest report's)."""
        found = self._epoch_training.pop(epoch, None)
        return dict(self._last_training if found is None else found)

    def add(self, metrics: Mapping[str, float]) -> None:
        """Add values to the History's latest epoch (what Keras's callbacks add to an epoch's
        logs, such as ``learning_rate``, is in Keras's History too)."""
        self._append(metrics)

    def validation(self, batches: int, metrics: Mapping[str, float]) -> None:
        if batches == 0:
            return  # perform_initial_validation: Keras has no such entry
        if self.per_epoch is None or batches % self.per_epoch == 0:
            self._append(metrics)
            self._pending = None
        else:
            self._pending = (batches, dict(metrics))

    def finish(self, batches: int) -> dict[str, list[float]]:
        """The History at the stage's end, after ``batches`` of its own."""
        if self._count:
            self._close_epoch()
        if self._pending is not None and self._pending[0] == batches:
            self._append(self._pending[1])
        self._pending = None
        return self.history

    def state(self) -> dict[str, Any]:
        return {
            "history": self.history,
            "sums": self._sums,
            "count": self._count,
            "last": self._last,
            "pending": self._pending,
        }

    def load_state(self, state: Mapping[str, Any]) -> None:
        self.history = {k: list(v) for k, v in state["history"].items()}
        self._sums = dict(state["sums"])
        self._count = state["count"]
        self._last = state["last"]
        pending = state["pending"]
        self._pending = None if pending is None else (pending[0], dict(pending[1]))


class StageCheckpoints(core.CheckpointContext):
    """The trial's checkpoint context as a stage's controller sees it: its checkpoints carry
    the trial's batch count and the stage (see the module docstring); ``write_state`` adds
    the script's files to each."""

    def __init__(
        self,
        inner: core.CheckpointContext,
        *,
        stage: int,
        offset: int,
        write_state: Callable[[Path], None],
    ) -> None:
        # Not CheckpointContext.__init__: every call goes to ``inner``.
        self._inner = inner
        self._stage = stage
        self._offset = offset
        self._write_state = write_state

    @contextlib.contextmanager
    def store_path(self, metadata: Mapping[str, Any]) -> Iterator[tuple[Path, str]]:
        if "steps_completed" not in metadata:
            raise ValueError("checkpoint metadata must contain 'steps_completed'")
        trial_metadata = {
            **metadata,
            "steps_completed": self._offset + int(metadata["steps_completed"]),
            STAGE_METADATA: self._stage + 1,
        }
        with self._inner.store_path(trial_metadata) as (path, storage_id):
            yield path, storage_id
            self._write_state(path)

    @contextlib.contextmanager
    def restore_path(self, storage_id: str) -> Iterator[Path]:
        with self._inner.restore_path(storage_id) as path:
            yield path

    def get_metadata(self, storage_id: str) -> dict[str, Any]:
        return self._inner.get_metadata(storage_id)


def write_state(
    path: Path,
    *,
    stage: int,
    offset: int,
    stages: list[dict[str, Any]],
    snapshots: Mapping[int, Path],
    history: EpochHistory,
) -> None:
    """Write the script's part of a checkpoint of stage ``stage`` (from 0) into ``path``."""
    directory = path / STATE_DIR
    directory.mkdir()
    for index, snapshot in snapshots.items():
        shutil.copytree(snapshot, directory / snapshot_dir(index))
    state = {"stage": stage, "offset": offset, "stages": stages, "history": history.state()}
    (directory / STATE_FILE).write_text(json.dumps(state))


def read_state(path: Path, into: Path) -> dict[str, Any] | None:
    """The script's part of the checkpoint at ``path``, its end states copied under ``into``;
    None for a checkpoint without one (the first stage's, before stages were recorded)."""
    directory = path / STATE_DIR
    if not (directory / STATE_FILE).exists():
        return None
    shutil.copytree(directory, into, dirs_exist_ok=True)
    state: dict[str, Any] = json.loads((directory / STATE_FILE).read_text())
    return state
