"""The contract between the engine and whatever keeps an experiment's record."""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import Any, Protocol

from pedl.engine._actions import Action
from pedl.engine._driver import TrialRecord
from pedl.storage import CheckpointSummary
from pedl.vocabulary._states import ExperimentState


@dataclass(frozen=True)
class StoredExperiment:
    """Everything needed to rebuild an experiment's driver, read in one go."""

    experiment_id: int
    config: dict[str, Any] = field(hash=False)
    state: ExperimentState
    events: list[dict[str, Any]] = field(hash=False)
    trials: list[TrialRecord] = field(hash=False)
    checkpoints: list[CheckpointSummary] = field(hash=False)


class ExperimentStore(Protocol):
    """Where the engine's record of experiments lives.

    Contract (checked by one test suite over every store):

    - :meth:`apply` writes the record-changing actions of one event (searcher events, trial
      creation, trial and experiment states with outcomes and errors, progress) in **one
      transaction**: all or nothing. It returns ``(request_id, trial_id)`` for each trial it
      created, in order. Other actions (kill, delete, log) are the shell's, and are ignored.
    - :meth:`load` returns what :meth:`apply` wrote: searcher events in order, every trial
      with its latest state, restarts and latest checkpoint, the experiment's completed
      checkpoints with their searcher metric.
    - :meth:`mark_checkpoints_deleted` is called after the files are gone; those checkpoints
      are no longer loaded.
    - Deleting checkpoints (:func:`delete_checkpoints`, the one order every shell follows):
      :meth:`claim_checkpoints_for_deletion` marks DELETED, in one transaction, those of the
      given checkpoints that no model version holds and returns them (a registered checkpoint
      is never touched; registering needs a COMPLETED checkpoint, so one claimed cannot be
      registered meanwhile); :meth:`release_checkpoints` makes claimed ones whose files could
      not be removed COMPLETED again, listed and loaded as before.
    - Safe to call from several threads; calls for one experiment come from one thread at a
      time.
    """

    def load(self, experiment_id: int) -> StoredExperiment: ...

    def apply(self, experiment_id: int, actions: Sequence[Action]) -> list[tuple[int, int]]: ...

    def mark_checkpoints_deleted(self, storage_ids: Sequence[str]) -> None: ...

    def claim_checkpoints_for_deletion(self, storage_ids: Sequence[str]) -> list[str]: ...

    def release_checkpoints(self, storage_ids: Sequence[str]) -> None: ...
