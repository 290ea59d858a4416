"""The experiment driver: one experiment's rules, with no I/O.

It is fed events (the experiment was started or restored, a user changed its state, a trial
was created, started, validated, checkpointed, killed, or exited with an outcome) and returns
:mod:`actions <pedl.engine._actions>`; it also answers the trial side's questions (what to
train next, whether to stop now). Local mode and the master both run it; they differ only in
how they carry the actions out. The rules that live here, once:

- **Searcher dispatch**: every searcher operation and event passes through a
  :class:`~pedl.searcher.SearcherRunner`, whose event log is persisted through
  :class:`AppendSearcherEvent` actions and from which the driver is rebuilt after a crash.
- **Restart policy**: an error before the trial progressed (:attr:`TrialError.before_progress`)
  ends the trial at once; a later error restarts it from its latest checkpoint up to
  ``max_restarts`` times, unless it repeats the error before the restart at the same batch
  (:meth:`TrialError.recurs`: the trial resumed exactly, so it would fail every time);
  ``InvalidHP`` and a user's stop end it without an error. A failure
  the shell blames on itself (:meth:`ExperimentDriver.trial_failed_by_master`: the master's
  own disk was full) restarts the trial without spending one of its restarts.
- **Checkpoint garbage collection**: when a trial ends, the checkpoints no retention rule keeps
  (``save_trial_latest``, ``save_trial_best``, ``save_experiment_best``) are deleted; the
  latest checkpoint of every trial that may still run is always kept.
- **Life of the experiment**: pause, activate, cancel and kill; it completes when the searcher
  has shut down and no trial is live, and errors, saying why, when every trial failed or
  the searcher itself failed.
- **Continuation** (``det experiment continue``): a continued experiment's searcher starts
  afresh with an empty log, beside the trials it already has (*carried* trials: their
  request ids not yet created in this log). When the searcher creates a carried trial's
  request id, an ended one (COMPLETED, or killed while it waited) is answered from its
  record, as Determined marks it exited: the searcher hears its validation at the length
  asked with its searcher metric (or its early exit, with the reason), then that it closed,
  and moves on; a live one (the store made the unfinished trials ACTIVE) trains again from
  its latest checkpoint as the same trial. Until then a live carried trial waits ACTIVE with
  no length asked of it: not runnable, so it neither runs nor holds a slot, while its latest
  checkpoint is kept. A request id with no trial gets a new one.

Not thread-safe: the shell serialises calls.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass, field, replace
from typing import Any, Literal

from pedl.config import ExperimentConfig, Length, flatten_hparams
from pedl.engine._actions import (
    Action,
    AppendSearcherEvent,
    CreateTrial,
    DeleteCheckpoints,
    KillTrial,
    LogTrial,
    SetExperimentState,
    SetProgress,
    SetTrialState,
)
from pedl.engine._retention import checkpoints_past_retention
from pedl.searcher import (
    CloseTrial,
    ExitedReason,
    NewTrial,
    SearcherRunner,
    SearchMethod,
    Shutdown,
    TrainTrial,
    TrialOperation,
    make_search_method,
)
from pedl.storage import CheckpointSummary
from pedl.vocabulary._outcomes import TrialError, TrialOutcome
from pedl.vocabulary._states import ExperimentState, TrialState

OperationStatus = Literal["train", "closed", "wait"]


@dataclass(frozen=True)
class OperationAnswer:
    """What a trial process does next: train to ``length``, stop (closed), or ask again."""

    status: OperationStatus
    length: int | None = None


@dataclass(frozen=True)
class TrialRecord:
    """What a store holds of a trial, to rebuild a driver from."""

    trial_id: int
    request_id: int
    hparams: dict[str, Any]
    seed: int
    state: TrialState
    restarts: int = 0
    latest_checkpoint: str | None = None
    latest_checkpoint_batches: int | None = None
    outcome: TrialOutcome | None = None
    """How the trial's latest run ended (``None`` while it has not ended)."""
    validation_metric: float | None = None
    """The searcher metric of the trial's latest validation (the largest batch count), if
    it reported one: what a continued search hears of a COMPLETED trial. A store may leave it
    out for a trial whose ``trial_created`` event the searcher log holds (never carried)."""
    warm_start: str | None = None
    """The checkpoint the trial starts from (kept until the trial has one of its own)."""
    error: TrialError | None = None
    """The error of its latest errored run, if any (a repeat of it ends the trial)."""


@dataclass
class _Trial:
    request_id: int
    hparams: dict[str, Any]
    seed: int
    trial_id: int | None = None
    state: TrialState = TrialState.ACTIVE
    restarts: int = 0
    issued: list[int] = field(default_factory=list)
    """Every length the searcher asked this trial to train to, ascending."""
    validated: int = 0
    """The largest length whose validation the searcher heard of."""
    close_requested: bool = False
    exit_reason: ExitedReason | None = None
    searcher_closed: bool = False
    running: bool = False
    process_done: int = 0
    """The largest length the running process has completed (or restored past)."""
    kill_requested: bool = False
    latest_checkpoint: str | None = None
    latest_checkpoint_batches: int | None = None
    error: TrialError | None = None
    outcome: TrialOutcome | None = None
    validation_metric: float | None = None
    carried: bool = False
    """A trial from before a continuation whose request id this searcher log has not
    created yet: the searcher hears of it only when it creates that request id."""
    warm_start: str | None = None
    owes_checkpoint: bool = False
    """Its process died with the shell after a validation and before the checkpoint that
    ends a trial: it runs once more, from its latest checkpoint, to save it (see
    :meth:`ExperimentDriver.start`)."""


_EXIT_REASONS = {
    TrialOutcome.INVALID_HP: ExitedReason.INVALID_HP,
    TrialOutcome.STOPPED_EARLY: ExitedReason.USER_REQUESTED_STOP,
    TrialOutcome.ERRORED: ExitedReason.ERRORED,
    TrialOutcome.KILLED: ExitedReason.USER_CANCELED,
}


class ExperimentDriver:
    """One experiment's engine (see the module docstring).

    Build it with the experiment's ``config`` and what its store holds (``state``, the
    searcher ``events`` in order, its ``trials`` and COMPLETED ``checkpoints``), then call
    :meth:`start` once: for a new experiment it asks the searcher for its first operations;
    for a restored one it redoes what a crash interrupted and makes the trials that were
    running (their processes died with the shell) runnable again, a trial that had
    validated past its latest checkpoint included (it runs once more to save its final one).
    """

    def __init__(
        self,
        config: ExperimentConfig,
        *,
        state: ExperimentState = ExperimentState.ACTIVE,
        events: Sequence[Mapping[str, Any]] = (),
        trials: Iterable[TrialRecord] = (),
        checkpoints: Iterable[CheckpointSummary] = (),
        search_method: SearchMethod | None = None,
    ) -> None:
        self.config = config
        self.state = state
        self._actions: list[Action] = []
        self._trials: dict[int, _Trial] = {}
        self._request_of: dict[int, int] = {}
        self._checkpoints = {c.storage_id: c for c in checkpoints}
        self._shutdown: Shutdown | None = None
        self._progress: float | None = None
        self._copy_notes: dict[int, str] = {}
        self._copies: dict[int, NewTrial] = {}
        """Copies of trials (population-based training) waiting for their parent's
        checkpoint at the length they copy, by request id."""
        self._restored = bool(events)
        for record in trials:
            trial = _Trial(
                request_id=record.request_id,
                hparams=dict(record.hparams),
                seed=record.seed,
                trial_id=record.trial_id,
                state=record.state,
                restarts=record.restarts,
                latest_checkpoint=record.latest_checkpoint,
                latest_checkpoint_batches=record.latest_checkpoint_batches,
                outcome=record.outcome,
                validation_metric=record.validation_metric,
                warm_start=record.warm_start,
                error=record.error,
                carried=True,  # until this log's trial_created event for it (``_replay``)
            )
            self._trials[record.request_id] = trial
            self._request_of[record.trial_id] = record.request_id
        method = search_method or make_search_method(config)
        self._runner = SearcherRunner.restore(
            method,
            [dict(e) for e in events],
            seed=config.reproducibility.experiment_seed,
            max_length=config.searcher_max_length,
            event_sink=self._record_event,
        )
        for event in events:
            self._replay(event)

    # events ------------------------------------------------------------------------------------

    def start(self) -> list[Action]:
        """Start a new experiment, or continue a restored one."""
        if not self._restored:
            return self._run(lambda: self._handle(self._runner.initial_operations()))

        def recover() -> None:
            for trial in self._trials.values():
                if (
                    not trial.running
                    and trial.trial_id is not None
                    and trial.state
                    in (
                        TrialState.RUNNING,
                        TrialState.QUEUED,
                    )
                ):
                    trial.owes_checkpoint = self._behind_its_checkpoint(trial)
                    if trial.owes_checkpoint:
                        self._emit(
                            LogTrial(
                                self._id(trial),
                                "the master stopped after the trial's last validation and before"
                                " its final checkpoint: it runs once more from its latest"
                                " checkpoint to save it",
                            )
                        )
                    self._set_state(trial, self._waiting_state())
            self._handle(self._runner.outstanding_operations)

        return self._run(recover)

    def trial_created(self, request_id: int, trial_id: int) -> list[Action]:
        """The store created the trial of :class:`CreateTrial` ``request_id`` as ``trial_id``.
        One created as the experiment ended (the searcher's answer to a trial closed by a
        cancel) is CANCELED at once, not left ACTIVE in an ended experiment."""

        def created() -> None:
            trial = self._trials[request_id]
            trial.trial_id = trial_id
            self._request_of[trial_id] = request_id
            note = self._copy_notes.pop(request_id, None)
            if note:
                self._emit(LogTrial(trial_id, note))

        if not self.state.is_terminal:
            return self._run(created)
        created()
        self._set_state(self._trials[request_id], TrialState.CANCELED)
        actions, self._actions = self._actions, []
        return actions

    def set_experiment_state(self, state: ExperimentState) -> list[Action]:
        """A user paused, activated, cancelled or killed the experiment (already recorded)."""

        def change() -> None:
            self.state = state
            if state == ExperimentState.STOPPING_KILLED:
                for trial in self._live():
                    if trial.running and not trial.kill_requested:
                        trial.kill_requested = True
                        self._emit(
                            LogTrial(
                                self._id(trial), "killing the trial process (experiment killed)"
                            )
                        )
                        self._emit(KillTrial(self._id(trial)))

        return self._run(change)

    def config_changed(self, config: ExperimentConfig) -> list[Action]:
        """The experiment's scheduling or retention settings changed (``resources``,
        ``checkpoint_storage.save_*``; already recorded): use ``config`` from now on, and
        delete at once the checkpoints its retention policy no longer keeps."""

        def change() -> None:
            self.config = config
            self._collect_garbage()

        return self._run(change)

    def trial_queued(self, trial_id: int) -> list[Action]:
        """The shell's scheduler holds the trial until slots are free."""
        trial = self._trial(trial_id)
        if trial.state == TrialState.ACTIVE and not trial.running:
            return self._run(lambda: self._set_state(trial, TrialState.QUEUED))
        return []

    def trial_started(self, trial_id: int) -> list[Action]:
        """The shell started a process for the trial (restored from its latest checkpoint)."""

        def started() -> None:
            trial = self._trial(trial_id)
            trial.running = True
            trial.kill_requested = False
            trial.process_done = self._resume_point(trial)
            self._set_state(trial, TrialState.RUNNING)

        return self._run(started)

    def validation_reported(
        self,
        trial_id: int,
        length: int,
        metric: float,
        metrics: Mapping[str, Any] | None = None,
    ) -> list[Action]:
        """The trial trained to ``length`` and validated; the searcher hears it once.

        ``metrics``: the validation's metrics (the shell reads the trial's latest stored
        validation). A multi-objective search (``searcher.metrics`` lists several) hears
        one value per objective: ``metric`` for the first, the others from ``metrics``
        (missing ones as missing: the searcher ranks them worst)."""

        def reported() -> None:
            trial = self._trial(trial_id)
            trial.process_done = max(trial.process_done, length)
            if trial.exit_reason or trial.searcher_closed or length <= trial.validated:
                return
            trial.validated = length
            self._handle(
                self._runner.on_validation_completed(
                    trial.request_id, metric, length, self._objectives(metric, metrics)
                )
            )

        return self._run(reported)

    def checkpoint_completed(self, checkpoint: CheckpointSummary) -> list[Action]:
        """The trial stored a checkpoint (already recorded by the shell)."""

        def completed() -> None:
            self._checkpoints[checkpoint.storage_id] = checkpoint
            trial = self._trial(checkpoint.trial_id)
            trial.latest_checkpoint = checkpoint.storage_id
            trial.latest_checkpoint_batches = checkpoint.total_batches
            self._create_copies()

        return self._run(completed)

    def kill_trial(self, trial_id: int) -> list[Action]:
        """A user killed one trial; the rest of the experiment goes on."""

        def kill() -> None:
            trial = self._trial(trial_id)
            if trial.state.is_terminal:
                return
            if trial.running:
                if not trial.kill_requested:
                    trial.kill_requested = True
                    self._emit(LogTrial(trial_id, "killing the trial process (trial killed)"))
                    self._emit(KillTrial(trial_id))
                return
            self._emit(LogTrial(trial_id, "the trial was killed"))
            self._finish(trial, TrialState.CANCELED, TrialOutcome.KILLED)

        return self._run(kill)

    def trial_exited(
        self, trial_id: int, outcome: TrialOutcome, error: TrialError | None = None
    ) -> list[Action]:
        """The trial's process ended with ``outcome`` (and ``error`` when it errored)."""
        return self._run(lambda: self._exited(self._trial(trial_id), outcome, error))

    def trial_failed_by_master(self, trial_id: int, error: TrialError) -> list[Action]:
        """The trial's process failed because of the master, not of the trial (the shell
        knows: e.g. the master's own disk was full). Unless the trial was being killed or its
        experiment is stopping, it waits to run again from its latest checkpoint, its outcome
        ``ERRORED`` with ``error`` recorded, without spending one of its ``max_restarts``,
        even when ``error`` came before training progressed."""
        return self._run(
            lambda: self._exited(
                self._trial(trial_id), TrialOutcome.ERRORED, error, master_fault=True
            )
        )

    # questions from the trial side ---------------------------------------------------------

    def next_operation(self, trial_id: int) -> OperationAnswer:
        """The next length for the trial's running process."""
        trial = self._trials.get(self._request_of.get(trial_id, -1))
        if trial is None or not trial.running:
            return OperationAnswer("closed")
        if self._copy_waits_on(trial):
            return OperationAnswer("wait")  # it checkpoints here as it stops
        ahead = [length for length in trial.issued if length > trial.process_done]
        if ahead:
            return OperationAnswer("train", ahead[0])
        if self._done_with_searcher(trial):
            return OperationAnswer("closed")
        return OperationAnswer("wait")

    def should_preempt(self, trial_id: int) -> bool:
        """Whether the trial's process should checkpoint and exit now."""
        trial = self._trials.get(self._request_of.get(trial_id, -1))
        return (
            trial is None
            or not trial.running
            or trial.kill_requested
            or self.state != ExperimentState.ACTIVE
        )

    # what the shell asks ----------------------------------------------------------------------

    def runnable_trials(self) -> list[int]:
        """Trials waiting for a process that have work to do, oldest first."""
        if self.state != ExperimentState.ACTIVE:
            return []
        return sorted(
            self._id(t)
            for t in self._trials.values()
            if t.trial_id is not None
            and t.state in (TrialState.ACTIVE, TrialState.QUEUED)
            and not t.running
            and self._has_work(t)
        )

    def running_trials(self) -> list[int]:
        return sorted(self._id(t) for t in self._trials.values() if t.running)

    def target_length(self, trial_id: int) -> int | None:
        """The largest length the searcher has asked of the trial so far."""
        trial = self._trial(trial_id)
        return trial.issued[-1] if trial.issued else None

    def to_batches(self, trial_id: int, length: int) -> int | None:
        """``length`` (in the searcher's unit) in batches for this trial, if it converts."""
        return self._to_batches(length, self._trial(trial_id).hparams)

    @property
    def finished(self) -> bool:
        return self.state.is_terminal

    def progress(self) -> float:
        return self._runner.progress()

    # internals ---------------------------------------------------------------------------------

    def _run(self, step: Any) -> list[Action]:
        """Run one event's handling and return the actions it produced."""
        if not self.state.is_terminal:
            try:
                step()
            except Exception as err:  # a searcher's bug or refusal ends the experiment
                self._fail(f"the searcher failed: {type(err).__name__}: {err}")
            self._settle()
        actions, self._actions = self._actions, []
        return actions

    def _emit(self, action: Action) -> None:
        self._actions.append(action)

    def _record_event(self, event: dict[str, Any]) -> None:
        self._emit(AppendSearcherEvent(dict(event)))

    def _replay(self, event: Mapping[str, Any]) -> None:
        kind = event.get("kind")
        trial = self._trials.get(int(event.get("request_id", -1)))
        if trial is None:
            return
        if kind == "trial_created":
            trial.carried = False
        elif kind == "validation_completed":
            length = int(event["length"])
            self._issue(trial, length)
            trial.validated = max(trial.validated, length)
        elif kind == "trial_exited_early":
            trial.exit_reason = ExitedReason(event["reason"])
        elif kind == "trial_closed":
            trial.searcher_closed = True

    def _handle(self, operations: Sequence[TrialOperation]) -> None:
        queue = list(operations)
        while queue:
            op = queue.pop(0)
            if isinstance(op, NewTrial):
                trial = self._trials.get(op.request_id)
                if trial is None and op.parent_request_id is not None:
                    self._copies[op.request_id] = op
                    self._create_copies()
                    continue
                if trial is None:
                    self._trials[op.request_id] = _Trial(
                        op.request_id, dict(op.hparams), op.trial_seed
                    )
                    warm_start = op.checkpoint or self.config.searcher.source_checkpoint_uuid
                    self._emit(
                        CreateTrial(op.request_id, dict(op.hparams), op.trial_seed, warm_start)
                    )
                queue.extend(self._runner.on_trial_created(op.request_id))
                if trial is not None and trial.carried:
                    trial.carried = False
                    if trial.state.is_terminal:
                        queue.extend(self._answer_from_record(trial))
            elif isinstance(op, TrainTrial):
                self._issue(self._trials[op.request_id], op.length)
            elif isinstance(op, CloseTrial):
                self._trials[op.request_id].close_requested = True
            elif isinstance(op, Shutdown):
                self._shutdown = op

    def _create_copies(self) -> None:
        """Create each waiting copy whose parent's checkpoint at the copied length exists
        (or whose parent ended without storing one: it starts from the parent's latest
        checkpoint at or before that length, and says so in its log)."""
        for request_id, op in sorted(self._copies.items()):
            if request_id not in self._copies:
                continue
            assert op.parent_request_id is not None and op.parent_length is not None
            parent = self._trials[op.parent_request_id]
            batches = self._to_batches(op.parent_length, parent.hparams)
            mine = sorted(
                (c for c in self._checkpoints.values() if c.trial_id == parent.trial_id),
                key=lambda c: c.total_batches,
            )
            exact = [c for c in mine if batches is None or c.total_batches == batches]
            if exact:
                source: CheckpointSummary | None = exact[-1]
                note = None
            elif parent.state.is_live or parent.running:
                continue  # it stores that checkpoint when it stops there (next_operation)
            else:
                earlier = [c for c in mine if batches is None or c.total_batches <= batches]
                source = earlier[-1] if earlier else None
                note = (
                    f"trial {parent.trial_id} ended without a checkpoint at the copied length "
                    f"{op.parent_length}: "
                    + (
                        f"starting from its checkpoint {source.storage_id} at batch "
                        f"{source.total_batches}"
                        if source
                        else "starting from scratch"
                    )
                )
            del self._copies[request_id]
            before = flatten_hparams(parent.hparams)
            changed = {
                name: {"from": before.get(name), "to": value}
                for name, value in flatten_hparams(op.hparams).items()
                if before.get(name) != value
            }
            if note:
                self._copy_notes[request_id] = note
            warm_start = source.storage_id if source else None
            self._trials[request_id] = _Trial(
                request_id, dict(op.hparams), op.trial_seed, warm_start=warm_start
            )
            self._emit(
                CreateTrial(
                    request_id,
                    dict(op.hparams),
                    op.trial_seed,
                    warm_start,
                    parent_trial_id=parent.trial_id,
                    parent_batches=source.total_batches if source else None,
                    changed_hparams=changed,
                )
            )
            self._handle(self._runner.on_trial_created(request_id))

    def _copy_waits_on(self, trial: _Trial) -> bool:
        """Whether a copy waits for ``trial``'s checkpoint at the length it has reached."""
        return any(
            op.parent_request_id == trial.request_id and op.parent_length == trial.process_done
            for op in self._copies.values()
        )

    def _answer_from_record(self, trial: _Trial) -> list[TrialOperation]:
        """Tell the searcher, which has just created the carried trial again, how it ended
        before the continuation (it does not run again): a trial that trained to the end
        validated at the length the searcher now asks of it with its latest searcher metric
        (no validation without one); one that stopped early (InvalidHP, stopped by its code,
        killed, errored) exited early with that reason; then it closed. Returns the
        searcher's answers (e.g. the next trial of a pool with a concurrency limit)."""
        ops: list[TrialOperation] = []
        asked = [
            op.length
            for op in self._runner.outstanding_operations
            if isinstance(op, TrainTrial) and op.request_id == trial.request_id
        ]
        reason = _EXIT_REASONS.get(trial.outcome) if trial.outcome else None
        if reason is not None:
            trial.exit_reason = reason
            ops.extend(self._runner.on_trial_exited_early(trial.request_id, reason))
        elif asked and (metric := trial.validation_metric) is not None:
            length = max(asked)
            self._issue(trial, length)
            trial.validated = length
            ops.extend(
                self._runner.on_validation_completed(
                    trial.request_id, metric, length, self._objectives(metric, None)
                )
            )
        trial.searcher_closed = True
        ops.extend(self._runner.on_trial_closed(trial.request_id))
        return ops

    def _objectives(
        self, metric: float, metrics: Mapping[str, Any] | None
    ) -> list[float | None] | None:
        """The objective values the searcher hears with a validation: ``None`` (only the
        searcher metric) unless ``searcher.metrics`` lists several objectives."""
        searcher = self.config.searcher
        if not searcher.multi_objective:
            return None
        found = metrics or {}
        values: list[float | None] = [metric]
        for objective in searcher.objectives[1:]:
            value = found.get(objective.name)
            if isinstance(value, int | float) and not isinstance(value, bool):
                values.append(float(value))
            else:
                values.append(None)
        return values

    def _issue(self, trial: _Trial, length: int) -> None:
        if length not in trial.issued:
            trial.issued = sorted([*trial.issued, length])

    def _exited(
        self,
        trial: _Trial,
        outcome: TrialOutcome,
        error: TrialError | None,
        *,
        master_fault: bool = False,
    ) -> None:
        trial.running = False
        trial.owes_checkpoint = False  # one run after a crash, whatever it saved
        trial_id = self._id(trial)
        if trial.state.is_terminal:
            return
        killed = (
            trial.kill_requested
            or outcome == TrialOutcome.KILLED
            or self.state == ExperimentState.STOPPING_KILLED
        )
        if killed:
            self._emit(LogTrial(trial_id, "the trial was killed"))
            self._finish(trial, TrialState.CANCELED, TrialOutcome.KILLED, error)
        elif outcome == TrialOutcome.INVALID_HP:
            self._emit(LogTrial(trial_id, "the trial rejected its hyperparameters (InvalidHP)"))
            self._finish(trial, TrialState.COMPLETED, outcome, error)
        elif outcome == TrialOutcome.STOPPED_EARLY:
            self._emit(LogTrial(trial_id, "the trial stopped itself early"))
            self._finish(trial, TrialState.COMPLETED, outcome)
        elif outcome == TrialOutcome.ERRORED and master_fault and not self.state.is_stopping:
            assert error is not None
            self._emit(
                LogTrial(
                    trial_id,
                    f"the trial failed because of the master ({error.summary()}); it runs again "
                    "from its latest checkpoint, not counted against max_restarts",
                )
            )
            trial.error = error
            self._set_state(trial, self._waiting_state(), TrialOutcome.ERRORED, error)
        elif outcome == TrialOutcome.ERRORED:
            self._errored(trial, error)
        elif outcome == TrialOutcome.COMPLETED and self._done_with_searcher(trial):
            if not self._has_work(trial):
                self._finish(trial, TrialState.COMPLETED, outcome)
            else:  # its run did its work (an earlier run's error no longer describes it)
                self._set_state(trial, self._waiting_state(), outcome)
        elif self.state == ExperimentState.STOPPING_CANCELED:
            self._finish(trial, TrialState.CANCELED, TrialOutcome.PREEMPTED)
        elif outcome == TrialOutcome.COMPLETED:  # done for now; the searcher has more to say
            self._set_state(trial, self._waiting_state(), outcome)
        else:  # preempted
            self._set_state(trial, self._waiting_state(), outcome)

    def _errored(self, trial: _Trial, error: TrialError | None) -> None:
        trial_id = self._id(trial)
        # ``recurred`` is this rule's to set, never the reporting process's
        error = (
            replace(error, recurred=False)
            if error
            else TrialError("TrialProcessError", "the trial process failed")
        )
        limit = self.config.max_restarts
        if self.state.is_stopping:
            self._finish(trial, TrialState.CANCELED, TrialOutcome.ERRORED, error)
        elif error.before_progress:
            self._emit(
                LogTrial(
                    trial_id,
                    f"the trial failed before training progressed ({error.summary()}); "
                    "it would fail the same way again, so it is not restarted",
                )
            )
            self._finish(trial, TrialState.ERROR, TrialOutcome.ERRORED, error)
        elif error.recurs(trial.error):
            self._emit(
                LogTrial(
                    trial_id,
                    f"the trial failed again with the same error at the same batch "
                    f"({error.batches}) after resuming exactly from its checkpoint "
                    f"({error.summary()}); it would fail the same way again, so it is not "
                    "restarted",
                )
            )
            self._finish(
                trial, TrialState.ERROR, TrialOutcome.ERRORED, replace(error, recurred=True)
            )
        elif trial.restarts >= limit:
            self._emit(LogTrial(trial_id, f"max_restarts ({limit}) exhausted: the trial errors"))
            self._finish(trial, TrialState.ERROR, TrialOutcome.ERRORED, error)
        else:
            trial.restarts += 1
            self._emit(
                LogTrial(
                    trial_id,
                    f"the trial failed ({error.summary()}); restarting from its latest "
                    f"checkpoint (restart {trial.restarts} of {limit})",
                )
            )
            trial.error = error
            self._set_state(
                trial, self._waiting_state(), TrialOutcome.ERRORED, error, restarts=trial.restarts
            )

    def _finish(
        self,
        trial: _Trial,
        state: TrialState,
        outcome: TrialOutcome,
        error: TrialError | None = None,
    ) -> None:
        """End the trial: record it, tell the searcher (once), collect garbage. A carried
        trial's searcher hears of it when it creates the trial (:meth:`_answer_from_record`)."""
        if outcome == TrialOutcome.COMPLETED and self._stopped_by_searcher(trial):
            outcome = TrialOutcome.STOPPED_BY_SEARCHER
        trial.error = error
        self._set_state(trial, state, outcome, error)
        if trial.carried:
            self._collect_garbage()
            return
        reason = _EXIT_REASONS.get(outcome)  # None for COMPLETED and PREEMPTED
        if reason is not None and trial.exit_reason is None and not trial.searcher_closed:
            trial.exit_reason = reason
            self._handle(self._runner.on_trial_exited_early(trial.request_id, reason))
        if not trial.searcher_closed:
            trial.searcher_closed = True
            self._handle(self._runner.on_trial_closed(trial.request_id))
        self._collect_garbage()

    def _settle(self) -> None:
        """Bring idle trials in line with the experiment's state; end the experiment when
        it is done; report progress."""
        if self.state.is_terminal:
            return
        if self._copies:
            self._create_copies()
        for trial in list(self._live()):
            if trial.running or trial.trial_id is None:
                continue
            if self.state == ExperimentState.ACTIVE:
                if not trial.owes_checkpoint and (
                    trial.searcher_closed
                    or (self._done_with_searcher(trial) and not self._has_work(trial))
                ):
                    failed = trial.exit_reason == ExitedReason.ERRORED
                    self._finish(
                        trial,
                        TrialState.ERROR if failed else TrialState.COMPLETED,
                        TrialOutcome.ERRORED if failed else TrialOutcome.COMPLETED,
                        trial.error,
                    )
                elif trial.state == TrialState.PAUSED:
                    self._set_state(trial, TrialState.ACTIVE)
            elif self.state == ExperimentState.PAUSED:
                if trial.state in (TrialState.ACTIVE, TrialState.QUEUED):
                    self._set_state(trial, TrialState.PAUSED)
            else:
                self._set_state(trial, TrialState.CANCELED)
        progress = self._runner.progress()
        if progress != self._progress:
            self._progress = progress
            self._emit(SetProgress(progress))
        if self.state.is_stopping and not self.running_trials():
            self._end(ExperimentState.CANCELED)
        elif (
            self.state == ExperimentState.ACTIVE
            and self._shutdown is not None
            and not any(t.state.is_live for t in self._trials.values())
        ):
            if self._shutdown.failure:
                self._end(ExperimentState.ERROR, self._failure_reason())
            else:
                self._end(ExperimentState.COMPLETED)

    def _failure_reason(self) -> str:
        failed = [t for t in self._trials.values() if t.state == TrialState.ERROR]
        lines = [f"every trial failed ({len(failed)} of {len(self._trials)})"]
        for trial in sorted(failed, key=lambda t: t.trial_id or 0)[:5]:
            what = trial.error.summary() if trial.error else "no error was reported"
            lines.append(f"trial {trial.trial_id}: {what}")
        return "; ".join(lines)

    def _fail(self, reason: str) -> None:
        for trial in self._live():
            if trial.running:
                trial.kill_requested = True
                self._emit(KillTrial(self._id(trial)))
            if trial.trial_id is not None:
                self._set_state(trial, TrialState.CANCELED)
        self._end(ExperimentState.ERROR, reason)

    def _end(self, state: ExperimentState, error: str | None = None) -> None:
        self.state = state
        self._collect_garbage()
        self._emit(SetExperimentState(state, error))

    def _collect_garbage(self) -> None:
        doomed = checkpoints_past_retention(
            self.config, self._checkpoints.values(), self._trials.values()
        )
        if doomed:
            for storage_id in doomed:
                del self._checkpoints[storage_id]
            self._emit(DeleteCheckpoints(tuple(sorted(doomed))))

    def _set_state(
        self,
        trial: _Trial,
        state: TrialState,
        outcome: TrialOutcome | None = None,
        error: TrialError | None = None,
        *,
        restarts: int | None = None,
    ) -> None:
        if trial.state == state and outcome is None and restarts is None:
            return
        trial.state = state
        if outcome is not None:
            trial.outcome = outcome
        self._emit(SetTrialState(self._id(trial), state, outcome, error, restarts))

    def _waiting_state(self) -> TrialState:
        if self.state == ExperimentState.PAUSED:
            return TrialState.PAUSED
        if self.state.is_stopping:
            return TrialState.CANCELED
        return TrialState.ACTIVE

    def _live(self) -> list[_Trial]:
        return [t for t in self._trials.values() if t.state.is_live or t.running]

    def _done_with_searcher(self, trial: _Trial) -> bool:
        return bool(
            trial.close_requested
            or trial.exit_reason
            or trial.searcher_closed
            or self._shutdown is not None
        )

    def _stopped_by_searcher(self, trial: _Trial) -> bool:
        """Whether the searcher closed the trial short of the search's ``max_length`` (ASHA
        stopping a trial at a lower rung), rather than after it trained it all."""
        max_length = self.config.searcher_max_length
        if not trial.close_requested or max_length is None:
            return False
        return trial.validated < max_length

    def _has_work(self, trial: _Trial) -> bool:
        return trial.owes_checkpoint or any(length > trial.validated for length in trial.issued)

    def _behind_its_checkpoint(self, trial: _Trial) -> bool:
        """Whether the trial validated further than its latest checkpoint reaches, without
        having errored or stopped: its process died between that validation and the
        checkpoint it saves as it ends (a trial's process always checkpoints last), so its
        final weights exist nowhere yet."""
        if not trial.validated or trial.exit_reason is not None:
            return False
        batches = self._to_batches(trial.validated, trial.hparams)
        return batches is not None and batches > (trial.latest_checkpoint_batches or 0)

    def _resume_point(self, trial: _Trial) -> int:
        """The largest issued length that a process restored from the trial's latest
        checkpoint has reached and whose validation the searcher heard of (0 without one): it
        is given only the lengths after it. It trains again to any length it reached only
        after the checkpoint, and is given again a length the checkpoint reached whose
        validation was lost (a crash between the checkpoint and the report): it reports that
        length's validation from the checkpoint without training."""
        batches = trial.latest_checkpoint_batches
        if not batches:
            return 0
        reached = [
            length
            for length in trial.issued
            if length <= trial.validated
            and (b := self._to_batches(length, trial.hparams)) is not None
            and b <= batches
        ]
        return max(reached, default=0)

    def _to_batches(self, length: int, hparams: Mapping[str, Any]) -> int | None:
        if getattr(self.config.searcher, "reported_time_metric", None):
            return None  # values of a metric the script reports, not batches
        unit = self.config.searcher_unit
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

    def _trial(self, trial_id: int) -> _Trial:
        return self._trials[self._request_of[trial_id]]

    def _id(self, trial: _Trial) -> int:
        assert trial.trial_id is not None, "the trial was not created yet"
        return trial.trial_id
