"""What the experiment driver asks its shell (local mode or the master) to do.

The shell carries the actions out in the order given. Those that change the record
(everything but :class:`KillTrial` and :class:`DeleteCheckpoints`) belong together: a store
that can, writes each event's actions in one transaction, so a crash never leaves a searcher
event without its trial row or a trial state without its searcher event.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

from pedl.vocabulary._outcomes import TrialError, TrialOutcome
from pedl.vocabulary._states import ExperimentState, TrialState


@dataclass(frozen=True)
class AppendSearcherEvent:
    """Append this record to the experiment's searcher event log."""

    event: dict[str, Any] = field(hash=False)


@dataclass(frozen=True)
class CreateTrial:
    """Create the trial the searcher knows as ``request_id``; then tell the driver its id
    (:meth:`ExperimentDriver.trial_created`)."""

    request_id: int
    hparams: dict[str, Any] = field(hash=False)
    seed: int
    warm_start: str | None = None
    """The checkpoint whose weights the trial starts from (``Create.checkpoint``, else
    ``searcher.source_checkpoint_uuid``), or ``None``."""
    parent_trial_id: int | None = None
    """A copy's lineage (population-based training): the trial it copies, whose checkpoint
    ``warm_start`` is, at ``parent_batches``."""
    parent_batches: int | None = None
    changed_hparams: dict[str, Any] | None = field(default=None, hash=False)
    """The hyperparameters that differ from the parent's (dotted names):
    ``{name: {"from": parent's, "to": the copy's}}``."""


@dataclass(frozen=True)
class SetTrialState:
    """Record the trial's new state; with its outcome and error when a run ended, and its
    restart count when it changed."""

    trial_id: int
    state: TrialState
    outcome: TrialOutcome | None = None
    error: TrialError | None = None
    restarts: int | None = None


@dataclass(frozen=True)
class KillTrial:
    """Stop the trial's running process now."""

    trial_id: int


@dataclass(frozen=True)
class DeleteCheckpoints:
    """Delete these checkpoints from storage, then mark them deleted in the record."""

    storage_ids: tuple[str, ...]


@dataclass(frozen=True)
class SetExperimentState:
    """Record the experiment's new state (and, for ``ERROR``, why)."""

    state: ExperimentState
    error: str | None = None


@dataclass(frozen=True)
class SetProgress:
    """Record the search's progress, 0.0 to 1.0."""

    progress: float


@dataclass(frozen=True)
class LogTrial:
    """Add a line from the engine to the trial's log (why it restarts, why it ended)."""

    trial_id: int
    message: str


Action = (
    AppendSearcherEvent
    | CreateTrial
    | SetTrialState
    | KillTrial
    | DeleteCheckpoints
    | SetExperimentState
    | SetProgress
    | LogTrial
)
