"""The orchestrator: the master's shell around the engine.

Each live experiment is an :class:`_Actor`: an :class:`~pedl.engine.ExperimentDriver` (the
rules, no I/O) plus the queue of actions it returned. The orchestrator feeds the drivers
events (user actions read from the database, trial processes starting, reporting and exiting)
and carries their actions out: record changes through :class:`SQLExperimentStore` (one
transaction per event), process kills through the resource manager, checkpoint deletion on a
background thread, log lines through :class:`TrialLogWriter`.

Locks: a driver's lock is held only while the driver computes (no I/O), so the trial side's
questions (:meth:`next_operation`, :meth:`should_preempt`) never wait for the database. Actions
are applied in the order the driver returned them by whichever thread holds the actor's
apply lock (the others' actions are carried out by it: flat combining), and a trial's report
is answered only once its actions are recorded. Process starts and file deletion happen
outside every lock.

One thread (started by :meth:`Orchestrator.start`) ticks a few times a second and after every
event from another thread (and every one of its own that produced actions): it reads the live
experiments' states (so a pause/activate/cancel/kill from the API is acted upon), handles trial
process exits and kill requests, and schedules runnable trials.

A master whose own disk is full (less free than ``min_free_disk_bytes`` where its home is)
starts no trial process: every queued trial, ``GET /cluster`` and the master's log say why;
a trial that fails meanwhile is the master's failure, not the trial's
(:meth:`~pedl.engine.ExperimentDriver.trial_failed_by_master`: no restart spent).

The master is its own one agent (see :mod:`._slots`): a slot disabled by an administrator
(``det slot disable``, stored in the database) takes no new trial, a disabled agent none at
all (every queued trial says so); the trials holding what was disabled without drain are told
to checkpoint and stop (:meth:`Orchestrator.should_preempt`), wait QUEUED and run again from
that checkpoint, and are killed after :data:`STOP_GRACE_SECONDS` if they have not stopped (a
failure of the master's: no restart spent); with drain they finish.

Durability: everything needed to continue is in the database. After a crash each driver is
rebuilt from its experiment's record; trials that were RUNNING or QUEUED start again from
their latest checkpoint (their old processes died with the master).

Trial tokens end with their attempt: each start of a trial's process issues the trial a new
token, its exit (completed, errored, killed, preempted, crashed) revokes it, and a starting
orchestrator revokes every trial's token, so neither a straggler nor a process left from
before can write.
"""

from __future__ import annotations

import logging
import os
import queue
import shutil
import threading
import time
from collections.abc import Callable, Sequence
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass, field
from datetime import UTC, datetime
from functools import partial

from sqlalchemy import select

from pedl.config import ExperimentConfig, parse_config
from pedl.db import Database, Experiment, SQLExperimentStore
from pedl.db import agents as agents_repo
from pedl.db import checkpoints as checkpoints_repo
from pedl.db import experiments as experiments_repo
from pedl.db import trials as trials_repo
from pedl.engine import (
    Action,
    DeleteCheckpoints,
    ExperimentDriver,
    KillTrial,
    LogTrial,
    OperationAnswer,
    SetExperimentState,
    delete_checkpoints,
)
from pedl.exec import EXIT_MASTER_GONE, EXIT_MODEL_DEF_ERROR, WorkerState, describe_status
from pedl.master._settings import MasterSettings
from pedl.master.orchestrator._log_writer import TrialLogWriter
from pedl.master.orchestrator._slots import (
    AGENT_ID,
    SlotBook,
    SlotState,
    agent_disabled_reason,
)
from pedl.master.rm import (
    IdleWorker,
    LocalResourceManager,
    ResourceManager,
    TrialLaunch,
    WorkerExit,
    storage_directory,
    trial_environment,
    trial_user_for,
)
from pedl.master.scheduler import (
    DEFAULT_PRIORITY,
    ExperimentLimits,
    RunningTrial,
    TrialRequest,
    never_fits,
    schedule,
)
from pedl.searcher import RemoteSearchMethod
from pedl.storage import CheckpointSummary, checkpoint_objectives, make_storage
from pedl.vocabulary import ExperimentState, TrialError, TrialOutcome, searcher_metric_of

logger = logging.getLogger("pedl.master")

TICK_SECONDS = 0.25
STOP_GRACE_SECONDS = 120.0
"""How long a trial told to stop because its slots were disabled (without drain) has to
checkpoint and exit before its process is killed (it then runs again from its latest
checkpoint, not counted against max_restarts)."""
MASTER_STREAM = "master"
_LIVE_EXPERIMENT_STATES = [
    ExperimentState.ACTIVE,
    ExperimentState.PAUSED,
    ExperimentState.STOPPING_CANCELED,
    ExperimentState.STOPPING_KILLED,
]

ResourceManagerFactory = Callable[..., ResourceManager]


@dataclass
class _Actor:
    """One live experiment: its driver and the actions waiting to be carried out."""

    experiment_id: int
    driver: ExperimentDriver
    lock: threading.Lock = field(default_factory=threading.Lock)
    changed: threading.Condition = field(init=False)
    apply_lock: threading.Lock = field(default_factory=threading.Lock)
    pending: list[tuple[int, Action]] = field(default_factory=list)
    issued: int = 0
    applied: int = 0
    broken: bool = False
    searcher: RemoteSearchMethod | None = None
    """A custom searcher's process, stopped when the actor is dropped."""

    def __post_init__(self) -> None:
        self.changed = threading.Condition(self.lock)

    @property
    def config(self) -> ExperimentConfig:
        return self.driver.config


class Orchestrator:
    """Runs the experiments stored in ``database`` (see the module docstring).

    ``master_url`` is the address trial processes use to reach this master's API. The
    resource manager is a :class:`LocalResourceManager` with ``settings.cpu_slots`` (reusing
    warm worker processes unless ``settings.worker_reuse`` is off) unless
    ``resource_manager`` (a factory called with ``on_exit`` and ``log_sink`` keywords) says
    otherwise. All public methods are thread-safe.
    """

    def __init__(
        self,
        database: Database,
        settings: MasterSettings,
        *,
        master_url: str,
        resource_manager: ResourceManagerFactory | None = None,
    ) -> None:
        self._db = database
        self._settings = settings
        self._store = SQLExperimentStore(database)
        self._master_url = master_url
        self.logs = TrialLogWriter(database)
        factory: ResourceManagerFactory = (
            resource_manager
            or _ray_factory(settings)
            or (
                lambda **kw: LocalResourceManager(
                    cpu_slots=settings.cpu_slots,
                    reuse_workers=settings.worker_reuse,
                    spare_workers=settings.spare_workers,
                    worker_template=settings.worker_template,
                    trial_user=trial_user_for(settings),
                    heartbeat_timeout=settings.worker_heartbeat_timeout,
                    **kw,
                )
            )
        )
        self._rm = factory(on_exit=self._on_exit, log_sink=self.logs.write)
        self._lock = threading.Lock()  # guards the maps below; never held across I/O
        self._actors: dict[int, _Actor] = {}
        self._experiment_of: dict[int, int] = {}
        self._running_slots: dict[int, int] = {}
        self._reasons: dict[int, str] = {}
        """Why each queued trial waits (slots, or what the resource manager waits for)."""
        self._slots_wanted = False
        """Whether trials wait for slots (then a trial with no work now gives its up)."""
        self._halted: str | None = None
        """Why no trial process starts now (the master's disk is full), if so."""
        self._slots = SlotBook()
        """The disabled slots and the trials holding slots (see :mod:`._slots`)."""
        self._slots_changed = threading.Event()
        """Set when the disabled slots changed: the tick tells the resource manager."""
        self._stopping_trials: dict[int, float] = {}
        """Trials told to stop because their slots were disabled -> when they are killed."""
        self._killed_for_slots: set[int] = set()
        self.started_at: datetime | None = None
        """When :meth:`start` ran (the agent's registration time)."""
        self._worker_exits_seen = 0
        self._reported: dict[int, tuple[TrialOutcome, TrialError | None]] = {}
        self._attempt_tokens: dict[int, str] = {}
        """The token hash of each trial's running attempt, revoked when it exits."""
        self._exits: queue.Queue[tuple[int, int]] = queue.Queue()
        self._kill_requests: queue.Queue[int] = queue.Queue()
        self._deleter = ThreadPoolExecutor(max_workers=1, thread_name_prefix="pedl-gc")
        self._wake = threading.Event()
        self._stopping = threading.Event()
        self._thread: threading.Thread | None = None

    # life ----------------------------------------------------------------------------------

    @property
    def total_slots(self) -> int:
        return self._rm.total_slots

    @property
    def uses_gpus(self) -> bool:
        """Whether the slots are GPUs (else CPU slots)."""
        return self._rm.uses_gpus

    def start(self) -> None:
        """Adopt the live experiments and start the orchestrator's thread."""
        self.started_at = datetime.now(UTC)
        self._rm.prepare(self._master_url)
        with self._db.session(write=True, serialize=True) as session:
            revoked = trials_repo.revoke_all_trial_tokens(session)
        if revoked:
            logger.info("revoked the tokens of %d trials (no attempt of them runs)", revoked)
        self.reload_disabled_slots()
        self._sync_experiments()
        self._thread = threading.Thread(target=self._loop, name="pedl-orchestrator", daemon=True)
        self._thread.start()

    def stop(self) -> None:
        """Stop scheduling and kill every trial process (they resume from their latest
        checkpoints when a master starts again)."""
        self._stopping.set()
        self._wake.set()
        if self._thread is not None:
            self._thread.join(timeout=30)
        self._rm.shutdown()
        with self._lock:
            searchers = [a.searcher for a in self._actors.values() if a.searcher is not None]
        for searcher in searchers:
            searcher.close()
        self._deleter.shutdown(wait=True)

    def _loop(self) -> None:
        while not self._stopping.is_set():
            try:
                self._tick()
            except Exception:
                logger.exception("orchestrator tick failed; retrying")
            self._wake.wait(TICK_SECONDS)
            self._wake.clear()

    def _tick(self) -> None:
        self._check_disk()
        if self._slots_changed.is_set():
            self._slots_changed.clear()
            with self._lock:
                disabled = self._slots.disabled_slots(self._rm.total_slots)
            self._rm.set_disabled_slots(disabled)
        self._kill_late_stoppers()
        while True:
            try:
                trial_id = self._kill_requests.get_nowait()
            except queue.Empty:
                break
            actor = self._actor_of(trial_id)
            if actor is not None:
                self._event(actor, partial(ExperimentDriver.kill_trial, trial_id=trial_id))
        while True:
            try:
                trial_id, returncode = self._exits.get_nowait()
            except queue.Empty:
                break
            self._handle_exit(trial_id, returncode)
        with self._lock:
            actors = list(self._actors.values())
        for actor in actors:
            self._drain(actor, actor.issued)
        self._note_worker_exits()
        self._sync_experiments()
        self._schedule()

    # experiments ---------------------------------------------------------------------------

    def _sync_experiments(self) -> None:
        """Adopt new live experiments, pass user state changes on, drop ended ones."""
        with self._db.session() as session:
            live = dict(
                session.execute(
                    select(Experiment.id, Experiment.state).where(
                        Experiment.state.in_(_LIVE_EXPERIMENT_STATES)
                    )
                ).all()
            )
        with self._lock:
            actors = dict(self._actors)
        for experiment_id, actor in actors.items():
            if experiment_id not in live or actor.broken:
                self._drop(actor)
        for experiment_id, state in sorted(live.items()):
            known = self._actors.get(experiment_id)
            if known is None:
                self._adopt(experiment_id)
            elif known.driver.finished:  # ended, then continued before this tick dropped it
                self._drop(known)
                self._adopt(experiment_id)
            elif state != known.driver.state:
                self._event(known, partial(ExperimentDriver.set_experiment_state, state=state))

    def _adopt(self, experiment_id: int) -> None:
        searcher: RemoteSearchMethod | None = None
        try:
            stored = self._store.load(experiment_id)
            config = parse_config(stored.config)
            searcher = self._custom_searcher(experiment_id, config)
            driver = ExperimentDriver(
                config,
                state=stored.state,
                events=stored.events,
                trials=stored.trials,
                checkpoints=stored.checkpoints,
                search_method=searcher,
            )
        except Exception as err:  # a config or searcher this version cannot run
            if searcher is not None:
                searcher.close()
            reason = f"the experiment cannot run: {type(err).__name__}: {err}"
            logger.error("experiment %d: %s", experiment_id, reason)
            self._store.apply(experiment_id, [SetExperimentState(ExperimentState.ERROR, reason)])
            return
        actor = _Actor(experiment_id, driver, searcher=searcher)
        with self._lock:
            self._actors[experiment_id] = actor
            for trial in stored.trials:
                self._experiment_of[trial.trial_id] = experiment_id
            running = [t.trial_id for t in stored.trials if t.trial_id in self._running_slots]
        for trial_id in running:  # a rebuilt actor whose trials' processes still run
            self._event(actor, partial(ExperimentDriver.trial_started, trial_id=trial_id))
        self._event(actor, lambda d: d.start())

    def experiment_config_changed(self, experiment_id: int, config: ExperimentConfig) -> None:
        """The experiment's stored scheduling or retention settings changed: a running
        experiment's scheduler and garbage collection use ``config`` from the next tick on
        (trials already running keep their slots). An experiment this orchestrator does not
        run reads the stored config when it is adopted."""
        with self._lock:
            actor = self._actors.get(experiment_id)
        if actor is not None:
            self._event(actor, partial(ExperimentDriver.config_changed, config=config))
        self._wake.set()

    def _custom_searcher(
        self, experiment_id: int, config: ExperimentConfig
    ) -> RemoteSearchMethod | None:
        """A custom searcher runs in a process of its own, from the stored model definition,
        with the environment a trial gets (none of the master's settings or secrets)."""
        if config.searcher.name != "custom":
            return None
        with self._db.session() as session:
            archive = experiments_repo.get_model_definition(session, experiment_id).archive
        return RemoteSearchMethod(config, archive=archive, base_env=trial_environment(os.environ))

    def _drop(self, actor: _Actor) -> None:
        with self._lock:
            if self._actors.get(actor.experiment_id) is actor:
                del self._actors[actor.experiment_id]
        with actor.changed:
            actor.changed.notify_all()
        if actor.searcher is not None:
            actor.searcher.close()

    def _actor_of(self, trial_id: int) -> _Actor | None:
        with self._lock:
            experiment_id = self._experiment_of.get(trial_id)
            return self._actors.get(experiment_id) if experiment_id is not None else None

    # events and actions ----------------------------------------------------------------------

    def _event(
        self,
        actor: _Actor,
        handle: Callable[[ExperimentDriver], list[Action]],
        *,
        wait: bool = True,
    ) -> None:
        """Feed the driver one event and return once its actions are carried out (with
        ``wait=False``, at once: the orchestrator's thread carries them out)."""
        with actor.changed:
            actions = handle(actor.driver)
            for action in actions:
                actor.issued += 1
                actor.pending.append((actor.issued, action))
            ticket = actor.issued
            actor.changed.notify_all()
        if wait:
            self._drain(actor, ticket)
        if actions or threading.current_thread() is not self._thread:
            # The tick's own events that change nothing (a queued trial that stays queued)
            # must not wake it again: it would spin while trials wait for slots.
            self._wake.set()

    def _drain(self, actor: _Actor, ticket: int) -> None:
        """Carry out the actor's pending actions in order, at least up to ``ticket``."""
        while not actor.broken:
            with actor.apply_lock:
                with actor.lock:
                    batch, actor.pending = actor.pending, []
                if batch:
                    try:
                        self._apply(actor, [a for _, a in batch])
                    except Exception:
                        # The record is the truth: drop this actor; the next tick rebuilds it.
                        logger.exception(
                            "experiment %d: could not record the engine's actions; reloading it",
                            actor.experiment_id,
                        )
                        actor.broken = True
                        self._wake.set()
                        return
                    actor.applied = batch[-1][0]
            with actor.lock:
                if actor.applied >= ticket and not actor.pending:
                    return

    def _apply(self, actor: _Actor, actions: Sequence[Action]) -> None:
        created = self._store.apply(actor.experiment_id, actions)
        for action in actions:
            if isinstance(action, KillTrial):
                self._rm.kill(action.trial_id)
            elif isinstance(action, DeleteCheckpoints):
                self._deleter.submit(self._delete, actor.config, action.storage_ids)
            elif isinstance(action, LogTrial):
                self._log(action.trial_id, action.message)
            elif isinstance(action, SetExperimentState):
                logger.info("experiment %d is %s", actor.experiment_id, action.state.value)
        for request_id, trial_id in created:
            with self._lock:
                self._experiment_of[trial_id] = actor.experiment_id
            logger.info("experiment %d: created trial %d", actor.experiment_id, trial_id)
            with actor.changed:
                for action in actor.driver.trial_created(request_id, trial_id):
                    actor.issued += 1
                    actor.pending.append((actor.issued, action))

    def _delete(self, config: ExperimentConfig, storage_ids: Sequence[str]) -> None:
        try:
            delete_checkpoints(self._store, make_storage(config.checkpoint_storage), storage_ids)
        except Exception as err:
            logger.warning("checkpoints %s not deleted: %s", ", ".join(storage_ids), err)

    def _log(self, trial_id: int, message: str) -> None:
        try:
            self.logs.write(trial_id, [(MASTER_STREAM, f"[master] {message}")])
        except Exception:
            logger.exception("could not write to the logs of trial %d", trial_id)

    # scheduling ------------------------------------------------------------------------------

    def _schedule(self) -> None:
        total = self._rm.total_slots
        requests: list[TrialRequest] = []
        limits: dict[int, ExperimentLimits] = {}
        with self._lock:
            actors = list(self._actors.values())
            running = [
                RunningTrial(t, self._experiment_of[t], slots)
                for t, slots in self._running_slots.items()
            ]
        for actor in actors:
            with actor.lock:
                runnable = actor.driver.runnable_trials()
            if not runnable:
                continue
            resources = actor.config.resources
            limits[actor.experiment_id] = ExperimentLimits(
                priority=resources.priority or DEFAULT_PRIORITY,
                weight=resources.weight,
                max_slots=resources.max_slots,
                max_concurrent_trials=getattr(actor.config.searcher, "max_concurrent_trials", 0),
            )
            impossible = None
            if self._halted is None:
                impossible = never_fits(resources.slots_per_trial, total, resources.max_slots)
            for trial_id in runnable:
                if impossible is not None:
                    error = TrialError(
                        "SchedulingError",
                        f"the trial can never be scheduled: {impossible}",
                        before_progress=True,
                    )
                    exited = partial(
                        ExperimentDriver.trial_exited,
                        trial_id=trial_id,
                        outcome=TrialOutcome.ERRORED,
                        error=error,
                    )
                    self._event(actor, exited)
                    continue
                requests.append(
                    TrialRequest(trial_id, actor.experiment_id, resources.slots_per_trial, trial_id)
                )
        with self._lock:
            halted = self._halted_reason()
            idle_disabled = self._slots.idle_disabled(total)
        placement = schedule(
            total, running, requests, limits, halted=halted, disabled_slots=idle_disabled
        )
        queued = dict(placement.waiting)
        starting = []
        for trial_id in placement.start:
            reason = self._not_ready(trial_id)
            if reason is None:
                starting.append(trial_id)
            else:
                queued[trial_id] = reason
        # The reasons first: a trial recorded QUEUED has its reason on GET /cluster.
        before, self._reasons = self._reasons, queued
        self._slots_wanted = bool(placement.waiting)
        for trial_id in starting:
            self._launch(trial_id)
        for trial_id, reason in queued.items():
            waiting = self._actor_of(trial_id)
            if waiting is not None:
                self._event(waiting, partial(ExperimentDriver.trial_queued, trial_id=trial_id))
            if before.get(trial_id) != reason:
                self._log(trial_id, f"queued: {reason}")

    def _not_ready(self, trial_id: int) -> str | None:
        """Why the resource manager cannot start the trial without waiting now (see
        :meth:`~pedl.master.rm.ResourceManager.not_ready_for`): it stays queued until the next
        tick, and the tick goes on."""
        actor = self._actor_of(trial_id)
        if actor is None:
            return None
        return self._rm.not_ready_for(
            actor.experiment_id,
            actor.config.resources.slots_per_trial,
            actor.config.environment.env_dict(self._rm.uses_gpus),
        )

    def _launch(self, trial_id: int) -> None:
        actor = self._actor_of(trial_id)
        if actor is None:
            return
        with self._db.session(write=True, serialize=True) as session:
            trial = trials_repo.get_trial(session, trial_id)
            token = trials_repo.rotate_trial_token(session, trial_id)
            checkpoint_batches = None
            if trial.latest_checkpoint_uuid:
                checkpoint_batches = checkpoints_repo.get_checkpoint(
                    session, trial.latest_checkpoint_uuid
                ).total_batches
            restarts = trial.restarts
        slots = actor.config.resources.slots_per_trial
        with self._lock:
            self._running_slots[trial_id] = slots
            self._reported.pop(trial_id, None)
            self._attempt_tokens[trial_id] = trials_repo.hash_token(token)
        self._event(actor, lambda d: d.trial_started(trial_id))
        where = (
            f"from the checkpoint at batch {checkpoint_batches}"
            if checkpoint_batches is not None
            else "from scratch"
        )
        self._log(trial_id, f"starting the trial process {where} (restarts so far: {restarts})")
        try:
            self._rm.start(
                TrialLaunch(
                    trial_id=trial_id,
                    master_url=self._master_url,
                    token=token,
                    slots=slots,
                    env=actor.config.environment.env_dict(self._rm.uses_gpus),
                    experiment_id=actor.experiment_id,
                    checkpoint_dir=_checkpoint_dir(actor.config),
                    resource_pool=actor.config.resources.resource_pool or None,
                )
            )
        except Exception as err:
            with self._lock:
                self._running_slots.pop(trial_id, None)
            self._end_attempt(trial_id)
            error = TrialError(
                type(err).__name__,
                f"the trial process could not be started: {err}",
                before_progress=True,
            )
            self._event(actor, lambda d: d.trial_exited(trial_id, TrialOutcome.ERRORED, error))
            return
        given = self._rm.slot_ids(trial_id)
        with self._lock:
            if trial_id in self._running_slots:  # not exited already
                self._slots.assign(trial_id, slots, self._rm.total_slots, given)

    # exits ---------------------------------------------------------------------------------------

    def _on_exit(self, trial_id: int, returncode: int) -> None:
        """Called by the resource manager's threads: queue the exit for the tick."""
        self._exits.put((trial_id, returncode))
        self._wake.set()

    def _end_attempt(self, trial_id: int) -> None:
        """Revoke the token of the trial's attempt that ended (not a newer one's)."""
        with self._lock:
            token_hash = self._attempt_tokens.pop(trial_id, None)
        if token_hash is None:
            return
        try:
            with self._db.session(write=True, serialize=True) as session:
                trials_repo.revoke_trial_token(session, trial_id, token_hash=token_hash)
        except Exception:
            logger.exception("could not revoke the token of trial %d", trial_id)

    def _handle_exit(self, trial_id: int, returncode: int) -> None:
        with self._lock:
            started = self._running_slots.pop(trial_id, None) is not None
            reported = self._reported.pop(trial_id, None)
            self._slots.release(trial_id)
            self._stopping_trials.pop(trial_id, None)
            killed_for_slots = trial_id in self._killed_for_slots
            self._killed_for_slots.discard(trial_id)
        if started:
            self._end_attempt(trial_id)
        if not started or self._stopping.is_set():
            return
        actor = self._actor_of(trial_id)
        if actor is None:
            return
        cause = self._rm.exit_cause(trial_id)
        if reported is not None:
            outcome, error = reported
        elif returncode == 0:
            outcome, error = TrialOutcome.PREEMPTED, None  # ended without a report: runnable again
        elif returncode == EXIT_MODEL_DEF_ERROR:
            outcome = TrialOutcome.ERRORED
            error = TrialError(
                "ModelDefError",
                "the model definition cannot be loaded (its traceback is in the trial's logs)",
                before_progress=True,
            )
        else:
            outcome = TrialOutcome.ERRORED
            gone = " (it lost its master)" if returncode == EXIT_MASTER_GONE else ""
            if cause:
                gone = f" ({cause})"
            error = TrialError(
                "TrialProcessExited",
                f"the trial process ended with {describe_status(returncode)}{gone} without "
                "reporting an error (see the trial's logs)",
            )
        self._log(
            trial_id,
            f"the trial process exited ({describe_status(returncode)})"
            + (f": {cause}" if cause else ""),
        )
        if killed_for_slots and outcome == TrialOutcome.ERRORED:
            stopped = TrialError(
                "SlotsDisabled",
                "the trial's slots were disabled (det agent/slot disable, without --drain) and "
                f"it did not checkpoint and stop within {STOP_GRACE_SECONDS:.0f} s: its process "
                "was killed",
            )
            self._event(actor, lambda d: d.trial_failed_by_master(trial_id, stopped))
            return
        halted = self._halted
        if outcome == TrialOutcome.ERRORED and halted is not None:
            cause = error.summary() if error is not None else "it failed"
            blamed = TrialError(
                "MasterDiskFull",
                f"the trial process failed ({cause}) while {halted}",
                traceback=error.traceback if error is not None else "",
            )
            self._event(actor, lambda d: d.trial_failed_by_master(trial_id, blamed))
            return
        self._event(actor, lambda d: d.trial_exited(trial_id, outcome, error))

    # the master's own disk -------------------------------------------------------------------

    def _check_disk(self) -> None:
        """Set :attr:`_halted` from the free space where the master's home is (logged when
        it changes)."""
        halted = disk_full_reason(self._settings) or self._rm.unavailable()
        if halted != self._halted:
            if halted is not None:
                logger.warning("starting no trial process: %s", halted)
            else:
                logger.info("the master's disk has room again: trial processes start again")
        self._halted = halted

    def scheduling_halted(self) -> str | None:
        """Why the master starts no trial process now (its disk is full, its resource manager
        is unavailable, or its agent is disabled), or ``None``."""
        with self._lock:
            return self._halted_reason()

    def _halted_reason(self) -> str | None:
        """:meth:`scheduling_halted`, the caller holding :attr:`_lock`."""
        if self._halted is None and not self._slots.agent_enabled:
            return agent_disabled_reason(self._slots.agent_draining)
        return self._halted

    # workers kept ready for trials -------------------------------------------------------------

    def worker_exits(self) -> list[WorkerExit]:
        """The latest warm and spare workers that exited by themselves while idle."""
        return self._rm.worker_exits()

    def idle_workers(self) -> list[IdleWorker]:
        """The warm and spare workers idle now, each holding a slot, longest idle first."""
        return self._rm.idle_workers()

    def _note_worker_exits(self) -> None:
        """Say so in the log of the trial a worker that exited by itself ran last (and in the
        master's log; the resource manager logs a spare's)."""
        for gone in self._rm.worker_exits():
            if gone.number <= self._worker_exits_seen:
                continue
            self._worker_exits_seen = gone.number
            if gone.trial_id is None:
                continue
            message = (
                f"the warm worker process {gone.pid}, which ran this trial, exited by itself "
                f"while idle ({describe_status(gone.returncode)}); the experiment's next trial "
                "starts in another process"
            )
            logger.warning("experiment %s: %s", gone.experiment_id, message)
            self._log(gone.trial_id, message)

    # the agent and its slots ----------------------------------------------------------------

    def reload_disabled_slots(self) -> None:
        """Read the disabled agent and slots from the database and act on them: no new trial
        on a disabled slot (none at all on a disabled agent); the running trials that hold
        slots disabled without drain (all of them, for the agent) are told to checkpoint and
        stop, and are killed if they have not within :data:`STOP_GRACE_SECONDS` (they run
        again from their latest checkpoint, once slots are free); a trial that was told so
        and whose slots were enabled again before it stopped goes on."""
        with self._db.session() as session:
            disabled = agents_repo.disabled(session, AGENT_ID)
        deadline = time.monotonic() + STOP_GRACE_SECONDS
        with self._lock:
            self._slots.set_disabled(disabled)
            to_stop = self._slots.to_stop(self._running_slots)
            told = [t for t in to_stop if t not in self._stopping_trials]
            self._stopping_trials = {
                t: self._stopping_trials.get(t, deadline) for t in sorted(to_stop)
            }
        for trial_id in told:
            self._log(
                trial_id,
                "its slots were disabled (det agent/slot disable, without --drain): the trial "
                "checkpoints and stops, and runs again from that checkpoint once slots are free",
            )
        self._slots_changed.set()
        self._wake.set()

    def _kill_late_stoppers(self) -> None:
        """Kill the processes of trials told to stop for their disabled slots that have not
        stopped in time."""
        now = time.monotonic()
        with self._lock:
            late = [t for t, deadline in self._stopping_trials.items() if deadline <= now]
            for trial_id in late:
                del self._stopping_trials[trial_id]
                self._killed_for_slots.add(trial_id)
        for trial_id in late:
            self._log(trial_id, "it did not stop in time after its slots were disabled: killed")
            self._rm.kill(trial_id)

    def agent_enabled(self) -> tuple[bool, bool]:
        """Whether the master's agent is enabled, and whether it drains (disabled with
        drain)."""
        with self._lock:
            return self._slots.agent_enabled, self._slots.agent_draining

    def slot_states(self) -> list[SlotState]:
        """The slots, each enabled or not and the trial holding it."""
        total = self._rm.total_slots
        with self._lock:
            return self._slots.states(total)

    def experiment_of(self, trial_id: int) -> int | None:
        """The experiment of a trial this orchestrator knows."""
        with self._lock:
            return self._experiment_of.get(trial_id)

    # the trial side --------------------------------------------------------------------------

    def next_operation(self, trial_id: int, wait_seconds: float = 5.0) -> OperationAnswer:
        """The trial process's next operation. While the searcher has no work for the trial
        yet, it keeps its slot up to ``wait_seconds`` in case work comes, but not while other
        trials wait for slots; then it is told ``wait``, checkpoints and exits, and is started
        again when work comes. A trial with no running process is told ``closed``."""
        actor = self._actor_of(trial_id)
        if actor is None:
            return OperationAnswer("closed")
        deadline = time.monotonic() + wait_seconds
        with actor.changed:
            while True:
                answer = actor.driver.next_operation(trial_id)
                remaining = deadline - time.monotonic()
                if (
                    answer.status != "wait"
                    or remaining <= 0
                    or actor.broken
                    # trials are queued for slots: give this one up (not when none may start)
                    or (self._slots_wanted and self._halted is None)
                ):
                    return answer
                actor.changed.wait(min(remaining, 0.5))

    def complete_operation(self, trial_id: int, length: int, metric: float) -> None:
        """The trial process trained to ``length`` and validated with ``metric``; returns
        once the searcher's handling of it is recorded."""
        actor = self._actor_of(trial_id)
        if actor is not None:
            metrics = None
            if actor.config.searcher.multi_objective:  # the objectives: the latest validation's
                with self._db.session() as session:
                    metrics = trials_repo.latest_validations(session, [trial_id]).get(trial_id)
            self._event(actor, lambda d: d.validation_reported(trial_id, length, metric, metrics))

    def report_exit(self, trial_id: int, outcome: TrialOutcome, error: TrialError | None) -> None:
        """The trial process says how its run ended; acted upon when the process exits."""
        with self._lock:
            if trial_id in self._running_slots:
                self._reported[trial_id] = (outcome, error)

    def checkpoint_completed(
        self, trial_id: int, storage_id: str, total_batches: int, metadata: dict[str, object]
    ) -> None:
        """The trial registered a completed checkpoint."""
        actor = self._actor_of(trial_id)
        if actor is None:
            return
        summary = CheckpointSummary(
            storage_id=storage_id,
            trial_id=trial_id,
            total_batches=total_batches,
            metric=searcher_metric_of(metadata, actor.config.searcher.metric),
            objectives=checkpoint_objectives(
                metadata, [o.name for o in actor.config.searcher.objectives]
            ),
        )
        # Called inside the request's write transaction: the actions are left to the tick.
        self._event(actor, lambda d: d.checkpoint_completed(summary), wait=False)

    def trial_workers(self, trial_id: int) -> list[WorkerState]:
        """The worker processes of the trial's running attempt (else its latest one of
        several workers), by rank: what the resource manager knows now."""
        return self._rm.workers(trial_id)

    def kill_trial(self, trial_id: int) -> None:
        """Stop one trial at once (on the next tick): its process is killed, the trial ends
        CANCELED, and the searcher hears that it exited early; the experiment goes on."""
        self._kill_requests.put(trial_id)
        self._wake.set()

    def asked_length(self, trial_id: int) -> int | None:
        """The largest length the searcher has asked the trial to train to (``None``: none
        yet, or a trial this orchestrator does not run)."""
        actor = self._actor_of(trial_id)
        if actor is None:
            return None
        with actor.lock:
            try:
                return actor.driver.target_length(trial_id)
            except KeyError:
                return None

    def length_in_batches(self, trial_id: int, length: int) -> int | None:
        """The searcher's ``length`` in batches for this trial (``None`` if it does not
        convert, or for a trial this orchestrator does not run)."""
        actor = self._actor_of(trial_id)
        if actor is None:
            return None
        with actor.lock:
            try:
                return actor.driver.to_batches(trial_id, length)
            except KeyError:
                return None

    def should_preempt(self, trial_id: int) -> bool:
        """Whether the trial's process should checkpoint and exit now (also: its slots were
        disabled without drain)."""
        with self._lock:
            if trial_id in self._stopping_trials:
                return True
        actor = self._actor_of(trial_id)
        if actor is None:
            return True
        with actor.lock:
            return actor.driver.should_preempt(trial_id)

    def queue_reason(self, trial_id: int) -> str | None:
        """Why the trial waits to start (for slots, or what the resource manager waits for),
        if it does."""
        return self._reasons.get(trial_id)

    def launch_problem(self, config: ExperimentConfig) -> tuple[str | None, str] | None:
        """Why no trial of ``config`` could ever start on this master (its trial user cannot
        run the trials' Python or reach their checkpoint storage, ...), as (the config's
        field to change, None for the master's settings; the reason), or None: see
        :meth:`~pedl.master.rm.ResourceManager.launch_problem`."""
        return self._rm.launch_problem(
            config.environment.env_dict(self._rm.uses_gpus), _checkpoint_dir(config)
        )

    def impossible_placement(self, config: ExperimentConfig) -> str | None:
        """Why trials of ``config`` could never be placed on this cluster, if so."""
        resources = config.resources
        total = self.total_slots
        if self._rm.unavailable() is not None:  # the cluster's size is unknown now
            total = max(total, resources.slots_per_trial)
        return never_fits(resources.slots_per_trial, total, resources.max_slots)


def _ray_factory(settings: MasterSettings) -> ResourceManagerFactory | None:
    """The factory of a :class:`~pedl.master.rm.RayResourceManager` where the settings'
    ``resource_manager.type`` is ``ray`` (else None)."""
    chosen = settings.resource_manager
    if chosen.type != "ray":
        return None
    from pedl.master.rm import RayResourceManager  # imports ray: only on Ray

    return lambda **kw: RayResourceManager(
        address=chosen.address,
        placement_strategy=chosen.placement_strategy,
        connect_timeout=chosen.connect_timeout,
        heartbeat_timeout=settings.worker_heartbeat_timeout,
        **kw,
    )


def disk_full_reason(settings: MasterSettings) -> str | None:
    """Why the disk of the master's home is too full to start trial processes (less free
    than ``settings.min_free_disk_bytes``, 0: never), or ``None``; ``None`` too when the free
    space cannot be read."""
    minimum = settings.min_free_disk_bytes
    if minimum <= 0:
        return None
    home = settings.home.expanduser()
    path = home
    while not path.exists() and path != path.parent:
        path = path.parent
    try:
        free = shutil.disk_usage(path).free
    except OSError:
        return None
    if free >= minimum:
        return None
    return (
        f"the master's disk is full: {_mib(free)} free where its home is ({home}), less than "
        f"its min_free_disk_bytes setting ({_mib(minimum)}); no trial starts until there is "
        "room"
    )


def _mib(count: int) -> str:
    return f"{count / (1024 * 1024):,.1f} MiB"


def _checkpoint_dir(config: ExperimentConfig) -> str | None:
    """Where on this machine the experiment's trials store checkpoints, if they do."""
    directory = storage_directory(config.checkpoint_storage)
    return None if directory is None else str(directory)
