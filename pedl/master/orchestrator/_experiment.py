"""One experiment's searcher and the searcher-side bookkeeping of its trials."""

from __future__ import annotations

import logging
from collections import deque
from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import Any, Literal

from pedl.config import ExperimentConfig, Length
from pedl.engine import ExperimentState
from pedl.master.db import Database
from pedl.master.db import searcher as searcher_repo
from pedl.master.db import trials as trials_repo
from pedl.searcher import (
    Close,
    Create,
    ExitedReason,
    Operation,
    SearcherRunner,
    Shutdown,
    ValidateAfter,
    make_search_method,
)

logger = logging.getLogger("pedl.master")

OperationStatus = Literal["train", "closed", "wait"]


@dataclass(frozen=True)
class OperationAnswer:
    """What a trial process should do next: train to ``length``, stop (closed), or ask again."""

    status: OperationStatus
    length: int | None = None


@dataclass
class _TrialWork:
    trial_id: int
    hparams: dict[str, Any]
    issued: list[int] = field(default_factory=list)
    """Every length the searcher asked this trial to train to, ascending."""
    validated: int = 0
    """The largest length whose validation the searcher was told about."""
    close_requested: bool = False
    exited: bool = False
    errored: bool = False
    searcher_closed: bool = False


class ExperimentActor:
    """The searcher of one experiment behind its durable event log, and its trials' work.

    Built from the database: the searcher is restored from the experiment's event log
    (every event is appended through the repository before the searcher handles it), the
    lengths each trial was given are rebuilt from the log's validations and the searcher's
    outstanding operations, and operations whose effect was lost in a crash (a trial not yet
    created) are redone. Not thread-safe: the orchestrator serialises every call.
    """

    def __init__(self, database: Database, experiment_id: int, config: ExperimentConfig) -> None:
        self.database = database
        self.experiment_id = experiment_id
        self.config = config
        self.state = ExperimentState.ACTIVE
        self.shutdown: Shutdown | None = None
        self._work: dict[int, _TrialWork] = {}
        self._request_of: dict[int, int] = {}
        with database.session() as session:
            events = [
                dict(row.event)
                for row in searcher_repo.list_searcher_events(session, experiment_id)
            ]
            trials, _ = trials_repo.list_trials(session, experiment_id, limit=2**31 - 1)
            for trial in trials:
                if trial.request_id is not None and trial.request_id.isdigit():
                    self._track(int(trial.request_id), trial.id, trial.hparams)
        self.searcher = SearcherRunner.restore(
            make_search_method(config), events, event_sink=self._append_event
        )
        for event in events:
            self._replay_bookkeeping(event)
        if events:
            self._handle(self.searcher.outstanding_operations)
        else:
            self._handle(self.searcher.initial_operations())

    # bookkeeping -----------------------------------------------------------------------------

    def _track(self, request_id: int, trial_id: int, hparams: dict[str, Any]) -> _TrialWork:
        work = self._work.get(request_id)
        if work is None:
            work = _TrialWork(trial_id, dict(hparams))
            self._work[request_id] = work
            self._request_of[trial_id] = request_id
        return work

    def _replay_bookkeeping(self, event: dict[str, Any]) -> None:
        kind = event.get("kind")
        work = self._work.get(int(event.get("request_id", -1)))
        if work is None:
            return
        if kind == "validation_completed":
            length = int(event["length"])
            if length not in work.issued:
                work.issued = sorted([*work.issued, length])
            work.validated = max(work.validated, length)
        elif kind == "trial_exited_early":
            work.exited = True
            work.errored = event.get("reason") == ExitedReason.ERRORED.value
        elif kind == "trial_closed":
            work.searcher_closed = True

    def _append_event(self, record: dict[str, Any]) -> None:
        with self.database.session(write=True) as session:
            searcher_repo.append_searcher_events(session, self.experiment_id, [record])

    def _handle(self, operations: Sequence[Operation]) -> None:
        queue = deque(operations)
        while queue:
            op = queue.popleft()
            if isinstance(op, Create):
                self._create(op)
                queue.extend(self.searcher.on_trial_created(op.request_id))
            elif isinstance(op, ValidateAfter):
                work = self._work[op.request_id]
                if op.length not in work.issued:
                    work.issued = sorted([*work.issued, op.length])
            elif isinstance(op, Close):
                self._work[op.request_id].close_requested = True
            elif isinstance(op, Shutdown):
                self.shutdown = op

    def _create(self, op: Create) -> None:
        if op.request_id in self._work:
            return
        with self.database.session(write=True) as session:
            trial = trials_repo.get_trial_by_request(
                session, self.experiment_id, str(op.request_id)
            )
            if trial is None:
                trial, _token = trials_repo.create_trial(
                    session,
                    experiment_id=self.experiment_id,
                    hparams=op.hparams,
                    seed=op.trial_seed,
                    request_id=str(op.request_id),
                )
            trial_id = trial.id
        self._track(op.request_id, trial_id, op.hparams)
        logger.info("experiment %d: created trial %d", self.experiment_id, trial_id)

    # queries -----------------------------------------------------------------------------------

    def request_id_of(self, trial_id: int) -> int | None:
        return self._request_of.get(trial_id)

    def trial_ids(self) -> list[int]:
        return sorted(self._request_of)

    def done_with_searcher(self, trial_id: int) -> bool:
        """Whether the searcher will give this trial no more lengths."""
        work = self._work_of(trial_id)
        return bool(work.close_requested or work.exited or work.searcher_closed or self.shutdown)

    def is_closed(self, trial_id: int) -> bool:
        """Whether the searcher was told the trial is closed (its record is final)."""
        return self._work_of(trial_id).searcher_closed

    def errored(self, trial_id: int) -> bool:
        return self._work_of(trial_id).errored

    def resume_point(self, trial_id: int, checkpoint_batches: int | None) -> int:
        """The largest issued length a process restored from a checkpoint at
        ``checkpoint_batches`` has already reached (0 without a checkpoint): it is given only
        the lengths after it, and trains again to any it reached only after the checkpoint."""
        work = self._work_of(trial_id)
        if not checkpoint_batches:
            return 0
        reached = [
            length
            for length in work.issued
            if (batches := self._to_batches(length, work.hparams)) is not None
            and batches <= checkpoint_batches
        ]
        return max(reached, default=0)

    def next_operation(self, trial_id: int, process_done: int) -> OperationAnswer:
        """The next length for a process that has completed lengths up to ``process_done``."""
        work = self._work_of(trial_id)
        ahead = [length for length in work.issued if length > process_done]
        if ahead:
            return OperationAnswer("train", ahead[0])
        if self.done_with_searcher(trial_id):
            return OperationAnswer("closed")
        return OperationAnswer("wait")

    def has_work_after(self, trial_id: int, process_done: int) -> bool:
        return any(length > process_done for length in self._work_of(trial_id).issued)

    def progress(self) -> float:
        return self.searcher.progress()

    # events --------------------------------------------------------------------------------------

    def complete(self, trial_id: int, length: int, metric: float) -> None:
        """The trial validated at ``length``; the searcher hears it once per length."""
        request_id = self._request_of[trial_id]
        work = self._work[request_id]
        if work.exited or work.searcher_closed or length <= work.validated:
            return
        work.validated = length
        self._handle(self.searcher.on_validation_completed(request_id, metric, length))

    def exit_early(self, trial_id: int, reason: ExitedReason) -> None:
        """The trial stops before finishing its lengths (once; later calls are ignored)."""
        request_id = self._request_of[trial_id]
        work = self._work[request_id]
        if work.exited or work.searcher_closed:
            return
        work.exited = True
        work.errored = reason == ExitedReason.ERRORED
        self._handle(self.searcher.on_trial_exited_early(request_id, reason))

    def close(self, trial_id: int) -> None:
        """The trial has ended; the searcher may now create others (once)."""
        request_id = self._request_of[trial_id]
        work = self._work[request_id]
        if work.searcher_closed:
            return
        work.searcher_closed = True
        self._handle(self.searcher.on_trial_closed(request_id))

    # helpers ---------------------------------------------------------------------------------

    def _work_of(self, trial_id: int) -> _TrialWork:
        return self._work[self._request_of[trial_id]]

    def _to_batches(self, length: int, hparams: dict[str, Any]) -> int | None:
        max_length = self.config.searcher.max_length
        unit = max_length.unit if max_length is not None else "batches"
        if unit == "batches":
            return length
        batch_size = hparams.get("global_batch_size")
        if not isinstance(batch_size, int) or batch_size <= 0:
            return None
        try:
            return Length(unit=unit, value=length).to_batches(
                batch_size, self.config.records_per_epoch
            )
        except ValueError:
            return None
