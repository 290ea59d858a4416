"""The orchestrator: experiments' searchers, the scheduler and the resource manager together.

One thread (started by :meth:`Orchestrator.start`, living as long as the master) ticks a few
times a second and on every event: it reads the experiments' states from the database (so a
pause/activate/cancel/kill from the API, or from another process, is acted upon), handles
trial process exits, and schedules queued trials. The trial-side API calls
(:meth:`next_operation`, :meth:`complete_operation`, :meth:`exit_early`,
:meth:`should_preempt`) are served from the same in-memory state under one lock.

Durability: everything needed to continue is in the database. After a crash the searchers are
restored from their event logs, trials that were RUNNING or QUEUED are requeued and start again
from their latest checkpoint (their old processes died with the master, and each start rotates
the trial's token, so a straggler can no longer write).
"""

from __future__ import annotations

import logging
import queue
import signal
import threading
import time
from collections.abc import Callable
from dataclasses import dataclass

from pedl.config import ConfigError, ExperimentConfig, parse_config
from pedl.engine import CheckpointState, ExperimentState, TrialState
from pedl.exec import EXIT_MASTER_GONE, is_permanent_failure
from pedl.master._settings import MasterSettings
from pedl.master.db import Database, Trial
from pedl.master.db import checkpoints as checkpoints_repo
from pedl.master.db import experiments as experiments_repo
from pedl.master.db import trials as trials_repo
from pedl.master.orchestrator._experiment import ExperimentActor, OperationAnswer
from pedl.master.orchestrator._log_writer import TrialLogWriter
from pedl.master.rm import LocalResourceManager, ResourceManager, TrialLaunch
from pedl.master.scheduler import (
    DEFAULT_PRIORITY,
    ExperimentLimits,
    RunningTrial,
    TrialRequest,
    never_fits,
    schedule,
)
from pedl.searcher import ExitedReason, SearcherError
from pedl.storage import CheckpointSummary, checkpoints_to_delete, make_storage

logger = logging.getLogger("pedl.master")

TICK_SECONDS = 0.25
MASTER_STREAM = "master"
_LIVE_EXPERIMENT_STATES = [
    ExperimentState.ACTIVE,
    ExperimentState.PAUSED,
    ExperimentState.STOPPING_CANCELED,
    ExperimentState.STOPPING_KILLED,
]
_WAITING = (TrialState.ACTIVE, TrialState.QUEUED)
_EXIT_REASONS = {
    "errored": ExitedReason.ERRORED,
    "invalid_hp": ExitedReason.INVALID_HP,
}

ResourceManagerFactory = Callable[..., ResourceManager]


@dataclass
class _Run:
    """A trial process the orchestrator started and has not seen exit."""

    trial_id: int
    experiment_id: int
    slots: int
    process_done: int
    kill_requested: bool = False


def describe_exit(returncode: int) -> str:
    """``"exit code 1"`` or ``"signal SIGKILL"``."""
    if returncode < 0:
        try:
            return f"signal {signal.Signals(-returncode).name}"
        except ValueError:
            return f"signal {-returncode}"
    return f"exit code {returncode}"


class Orchestrator:
    """Runs the experiments stored in ``database`` (see the module docstring).

    ``master_url`` is the address trial processes use to reach this master's API. The
    resource manager is a :class:`LocalResourceManager` with ``settings.cpu_slots`` unless
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
        self._master_url = master_url
        self.logs = TrialLogWriter(database)
        factory: ResourceManagerFactory = resource_manager or (
            lambda **kw: LocalResourceManager(cpu_slots=settings.cpu_slots, **kw)
        )
        self._rm = factory(on_exit=self._on_exit, log_sink=self.logs.write)
        self._lock = threading.RLock()
        self._changed = threading.Condition(self._lock)
        self._actors: dict[int, ExperimentActor] = {}
        self._broken: set[int] = set()
        self._running: dict[int, _Run] = {}
        self._reasons: dict[int, str] = {}
        self._progress: dict[int, float] = {}
        self._exits: queue.Queue[tuple[int, int]] = queue.Queue()
        self._kill_requests: set[int] = set()
        self._wake = threading.Event()
        self._stopping = threading.Event()
        self._thread: threading.Thread | None = None

    # life ----------------------------------------------------------------------------------

    @property
    def total_slots(self) -> int:
        return self._rm.total_slots

    def start(self) -> None:
        """Recover from the database and start the orchestrator's thread."""
        with self._lock:
            self._recover()
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

    def _loop(self) -> None:
        while not self._stopping.is_set():
            try:
                with self._lock:
                    self._tick()
                    self._changed.notify_all()
            except Exception:
                logger.exception("orchestrator tick failed; retrying")
            self._wake.wait(TICK_SECONDS)
            self._wake.clear()

    def _recover(self) -> None:
        """Requeue the trials a previous master left RUNNING or QUEUED."""
        with self._db.session(write=True) as session:
            experiments, _ = experiments_repo.list_experiments(
                session, states=_LIVE_EXPERIMENT_STATES, limit=2**31 - 1
            )
            for experiment in experiments:
                trials, _ = trials_repo.list_trials(
                    session,
                    experiment.id,
                    states=[TrialState.RUNNING, TrialState.QUEUED],
                    limit=2**31 - 1,
                )
                for trial in trials:
                    trials_repo.set_trial_state(session, trial.id, TrialState.ACTIVE)

    # the tick ------------------------------------------------------------------------------

    def _tick(self) -> None:
        for trial_id in sorted(self._kill_requests):
            self._kill_trial_now(trial_id)
        self._kill_requests.clear()
        while True:
            try:
                trial_id, returncode = self._exits.get_nowait()
            except queue.Empty:
                break
            self._handle_exit(trial_id, returncode)
        with self._db.session() as session:
            rows, _ = experiments_repo.list_experiments(
                session, states=_LIVE_EXPERIMENT_STATES, limit=2**31 - 1
            )
            live = {row.id: (row.state, row.config) for row in rows}
        for experiment_id in list(self._actors):
            if experiment_id not in live:
                del self._actors[experiment_id]
        for experiment_id in sorted(live):
            state, document = live[experiment_id]
            actor = self._actors.get(experiment_id) or self._adopt(experiment_id, document)
            if actor is not None:
                actor.state = state
                self._step(actor)
        self._schedule()

    def _adopt(self, experiment_id: int, document: dict[str, object]) -> ExperimentActor | None:
        if experiment_id in self._broken:
            return None
        try:
            config = parse_config(dict(document))
            actor = ExperimentActor(self._db, experiment_id, config)
        except (ConfigError, SearcherError, ValueError) as err:
            logger.error("experiment %d cannot run: %s", experiment_id, err)
            self._broken.add(experiment_id)
            with self._db.session(write=True) as session:
                experiments_repo.set_experiment_state(session, experiment_id, ExperimentState.ERROR)
            return None
        self._actors[experiment_id] = actor
        return actor

    def _trials(self, experiment_id: int, states: list[TrialState] | None = None) -> list[Trial]:
        with self._db.session() as session:
            rows, _ = trials_repo.list_trials(
                session, experiment_id, states=states, limit=2**31 - 1
            )
        return rows

    def _step(self, actor: ExperimentActor) -> None:
        """Bring the experiment's trials in line with its state; end it when it is done."""
        state = actor.state
        live = [t for t in self._trials(actor.experiment_id) if t.state.is_live]
        idle = [t for t in live if t.id not in self._running]
        if state == ExperimentState.ACTIVE:
            for trial in idle:
                if actor.request_id_of(trial.id) is None:
                    continue
                if actor.is_closed(trial.id):
                    final = TrialState.ERROR if actor.errored(trial.id) else TrialState.COMPLETED
                    self._set_trial_state(trial.id, final)
                elif trial.state == TrialState.PAUSED:
                    self._set_trial_state(trial.id, TrialState.ACTIVE)
            self._update_progress(actor)
            if actor.shutdown is not None and not any(
                t.state.is_live for t in self._trials(actor.experiment_id)
            ):
                ended = (
                    ExperimentState.ERROR if actor.shutdown.failure else ExperimentState.COMPLETED
                )
                self._set_experiment_state(actor.experiment_id, ended)
                del self._actors[actor.experiment_id]
        elif state == ExperimentState.PAUSED:
            for trial in idle:
                if trial.state in _WAITING:
                    self._set_trial_state(trial.id, TrialState.PAUSED)
        else:  # stopping
            killing = state == ExperimentState.STOPPING_KILLED
            for trial in idle:
                self._set_trial_state(trial.id, TrialState.CANCELED)
            runs = [r for r in self._running.values() if r.experiment_id == actor.experiment_id]
            for run in runs:
                if killing and not run.kill_requested:
                    run.kill_requested = True
                    self._log(run.trial_id, "killing the trial process (experiment killed)")
                    self._rm.kill(run.trial_id)
            if not runs:
                self._set_experiment_state(actor.experiment_id, ExperimentState.CANCELED)
                del self._actors[actor.experiment_id]

    def _update_progress(self, actor: ExperimentActor) -> None:
        progress = actor.progress()
        if self._progress.get(actor.experiment_id) == progress:
            return
        with self._db.session(write=True) as session:
            experiments_repo.set_experiment_progress(session, actor.experiment_id, progress)
        self._progress[actor.experiment_id] = progress

    # scheduling ------------------------------------------------------------------------------

    def _schedule(self) -> None:
        total = self._rm.total_slots
        queued: list[TrialRequest] = []
        limits: dict[int, ExperimentLimits] = {}
        for actor in self._actors.values():
            if actor.state != ExperimentState.ACTIVE:
                continue
            resources = actor.config.resources
            slots = resources.slots_per_trial
            limits[actor.experiment_id] = ExperimentLimits(
                priority=resources.priority or DEFAULT_PRIORITY,
                weight=resources.weight,
                max_slots=resources.max_slots,
                max_concurrent_trials=getattr(actor.config.searcher, "max_concurrent_trials", 0),
            )
            for trial in self._trials(actor.experiment_id, list(_WAITING)):
                if trial.id in self._running or actor.request_id_of(trial.id) is None:
                    continue
                impossible = never_fits(slots, total, resources.max_slots)
                if impossible is not None:
                    self._log(trial.id, f"the trial can never be scheduled: {impossible}")
                    self._error_trial(actor, trial.id)
                    continue
                queued.append(TrialRequest(trial.id, actor.experiment_id, slots, trial.id))
        running = [
            RunningTrial(r.trial_id, r.experiment_id, r.slots) for r in self._running.values()
        ]
        placement = schedule(total, running, queued, limits)
        for trial_id in placement.start:
            self._reasons.pop(trial_id, None)
            self._launch(trial_id)
        for trial_id, reason in placement.waiting.items():
            with self._db.session(write=True) as session:
                trial = trials_repo.get_trial(session, trial_id)
                if trial.state == TrialState.ACTIVE:
                    trials_repo.set_trial_state(session, trial_id, TrialState.QUEUED)
            if self._reasons.get(trial_id) != reason:
                self._reasons[trial_id] = reason
                self._log(trial_id, f"queued: {reason}")

    def _launch(self, trial_id: int) -> None:
        with self._db.session(write=True) as session:
            trial = trials_repo.set_trial_state(session, trial_id, TrialState.RUNNING)
            token = trials_repo.rotate_trial_token(session, trial_id)
            checkpoint_batches = None
            if trial.latest_checkpoint_uuid:
                checkpoint_batches = checkpoints_repo.get_checkpoint(
                    session, trial.latest_checkpoint_uuid
                ).total_batches
            experiment_id, restarts = trial.experiment_id, trial.restarts
        actor = self._actors[experiment_id]
        config = actor.config
        run = _Run(
            trial_id=trial_id,
            experiment_id=experiment_id,
            slots=config.resources.slots_per_trial,
            process_done=actor.resume_point(trial_id, checkpoint_batches),
        )
        self._running[trial_id] = run
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
                    slots=run.slots,
                    env=config.environment.env_dict(self._rm.uses_gpus),
                )
            )
        except Exception as err:
            del self._running[trial_id]
            self._log(trial_id, f"the trial process could not be started: {err}")
            self._error_trial(actor, trial_id)

    # exits ---------------------------------------------------------------------------------------

    def _on_exit(self, trial_id: int, returncode: int) -> None:
        """Called by the resource manager's threads: queue the exit for the tick."""
        self._exits.put((trial_id, returncode))
        self._wake.set()

    def _handle_exit(self, trial_id: int, returncode: int) -> None:
        run = self._running.pop(trial_id, None)
        if run is None or self._stopping.is_set():
            return
        actor = self._actors.get(run.experiment_id)
        if actor is None:
            return
        with self._db.session() as session:
            trial = trials_repo.get_trial(session, trial_id)
        if trial.state.is_terminal:
            return
        state = actor.state
        if run.kill_requested or state == ExperimentState.STOPPING_KILLED:
            self._log(trial_id, f"the trial process was killed ({describe_exit(returncode)})")
            self._set_trial_state(trial_id, TrialState.CANCELED)
            return
        if returncode == 0:
            if actor.done_with_searcher(trial_id) and not actor.has_work_after(
                trial_id, run.process_done
            ):
                self._log(trial_id, "the trial completed")
                self._set_trial_state(trial_id, TrialState.COMPLETED)
                actor.close(trial_id)
            elif state == ExperimentState.STOPPING_CANCELED:
                self._set_trial_state(trial_id, TrialState.CANCELED)
            elif state == ExperimentState.PAUSED:
                self._set_trial_state(trial_id, TrialState.PAUSED)
            else:
                self._set_trial_state(trial_id, TrialState.ACTIVE)
            return
        self._log(trial_id, f"the trial process failed ({describe_exit(returncode)})")
        if is_permanent_failure(returncode):
            self._error_trial(actor, trial_id)
            return
        if state == ExperimentState.STOPPING_CANCELED:
            self._set_trial_state(trial_id, TrialState.CANCELED)
            return
        if returncode == EXIT_MASTER_GONE and self._stopping.is_set():
            return
        limit = actor.config.max_restarts
        if trial.restarts >= limit:
            self._log(trial_id, f"max_restarts ({limit}) exhausted: the trial errors")
            self._error_trial(actor, trial_id)
            return
        with self._db.session(write=True) as session:
            restarts = trials_repo.record_trial_restart(session, trial_id).restarts
        self._log(
            trial_id,
            f"restarting from the latest checkpoint (restart {restarts} of {limit})",
        )
        paused = state == ExperimentState.PAUSED
        self._set_trial_state(trial_id, TrialState.PAUSED if paused else TrialState.ACTIVE)

    def _kill_trial_now(self, trial_id: int) -> None:
        with self._db.session() as session:
            trial = trials_repo.get_trial(session, trial_id)
        if trial.state.is_terminal:
            return
        run = self._running.get(trial_id)
        if run is not None:
            run.kill_requested = True
            self._log(trial_id, "killing the trial process (trial killed)")
            self._rm.kill(trial_id)
        else:
            self._log(trial_id, "the trial was killed")
            self._set_trial_state(trial_id, TrialState.CANCELED)
        actor = self._actors.get(trial.experiment_id)
        if actor is not None and actor.request_id_of(trial_id) is not None:
            actor.exit_early(trial_id, ExitedReason.USER_CANCELED)
            actor.close(trial_id)

    def _error_trial(self, actor: ExperimentActor, trial_id: int) -> None:
        self._set_trial_state(trial_id, TrialState.ERROR)
        actor.exit_early(trial_id, ExitedReason.ERRORED)
        actor.close(trial_id)

    # small helpers -------------------------------------------------------------------------------

    def _set_trial_state(self, trial_id: int, state: TrialState) -> None:
        with self._db.session(write=True) as session:
            trial = trials_repo.set_trial_state(session, trial_id, state)
            experiment_id = trial.experiment_id
        if not state.is_live:
            self._reasons.pop(trial_id, None)
        if state.is_terminal:
            self._collect_garbage(experiment_id)

    def _collect_garbage(self, experiment_id: int) -> None:
        """Delete the checkpoints no retention rule of the experiment keeps (Determined's
        save_trial_latest / save_trial_best / save_experiment_best); the latest checkpoint of
        every trial that may still run is always kept."""
        actor = self._actors.get(experiment_id)
        if actor is None:
            return
        config = actor.config
        with self._db.session() as session:
            rows, _ = checkpoints_repo.list_checkpoints(
                session,
                experiment_id=experiment_id,
                states=[CheckpointState.COMPLETED],
                limit=2**31 - 1,
            )
            live = trials_repo.list_trials(session, experiment_id, limit=2**31 - 1)[0]
            keep = [t.latest_checkpoint_uuid for t in live if t.state.is_live]
            summaries = [
                CheckpointSummary(
                    storage_id=c.uuid,
                    trial_id=c.trial_id,
                    total_batches=c.total_batches,
                    metric=_searcher_metric(c.metadata_, config.searcher.metric),
                )
                for c, _ in rows
            ]
        storage_config = config.checkpoint_storage
        doomed = checkpoints_to_delete(
            summaries,
            smaller_is_better=config.searcher.smaller_is_better,
            save_trial_latest=storage_config.save_trial_latest,
            save_trial_best=storage_config.save_trial_best,
            save_experiment_best=storage_config.save_experiment_best,
            keep=[uuid for uuid in keep if uuid],
        )
        if not doomed:
            return
        try:
            storage = make_storage(storage_config)
            for uuid in sorted(doomed):
                storage.delete(uuid)
        except (OSError, ValueError) as err:
            logger.warning("experiment %d: checkpoints not deleted: %s", experiment_id, err)
            return
        with self._db.session(write=True) as session:
            checkpoints_repo.mark_checkpoints_deleted(session, doomed)

    def _set_experiment_state(self, experiment_id: int, state: ExperimentState) -> None:
        with self._db.session(write=True) as session:
            experiments_repo.set_experiment_state(session, experiment_id, state)
        logger.info("experiment %d is %s", experiment_id, state.value)

    def _log(self, trial_id: int, message: str) -> None:
        try:
            self.logs.write(trial_id, [(MASTER_STREAM, f"[master] {message}")])
        except Exception:
            logger.exception("could not write to the logs of trial %d", trial_id)

    # the trial side --------------------------------------------------------------------------

    def next_operation(self, trial_id: int, wait_seconds: float = 5.0) -> OperationAnswer:
        """The trial process's next operation; waits up to ``wait_seconds`` for work to
        appear before answering ``wait``. A trial with no running process is told
        ``closed``."""
        deadline = time.monotonic() + wait_seconds
        with self._changed:
            while True:
                run = self._running.get(trial_id)
                actor = self._actors.get(run.experiment_id) if run else None
                if run is None or actor is None:
                    return OperationAnswer("closed")
                answer = actor.next_operation(trial_id, run.process_done)
                remaining = deadline - time.monotonic()
                if answer.status != "wait" or remaining <= 0:
                    return answer
                self._changed.wait(remaining)

    def complete_operation(self, trial_id: int, length: int, metric: float) -> None:
        """The trial process trained to ``length`` and validated with ``metric``."""
        with self._changed:
            run = self._running.get(trial_id)
            if run is None:
                return
            run.process_done = max(run.process_done, length)
            actor = self._actors.get(run.experiment_id)
            if actor is not None:
                actor.complete(trial_id, length, metric)
            self._changed.notify_all()
        self._wake.set()

    def exit_early(self, trial_id: int, reason: str) -> None:
        """The trial stops before its lengths are done (e.g. the model stopped itself)."""
        with self._changed:
            run = self._running.get(trial_id)
            actor = self._actors.get(run.experiment_id) if run else None
            if actor is not None:
                actor.exit_early(trial_id, _EXIT_REASONS.get(reason, ExitedReason.USER_CANCELED))
            self._changed.notify_all()
        self._wake.set()

    def kill_trial(self, trial_id: int) -> None:
        """Stop one trial at once (on the next tick): its process is killed, the trial ends
        CANCELED, and the searcher hears that it exited early; the experiment goes on."""
        with self._lock:
            self._kill_requests.add(trial_id)
        self._wake.set()

    def should_preempt(self, trial_id: int) -> bool:
        """Whether the trial's process should checkpoint and exit now."""
        with self._lock:
            run = self._running.get(trial_id)
            actor = self._actors.get(run.experiment_id) if run else None
            return actor is None or actor.state != ExperimentState.ACTIVE

    def queue_reason(self, trial_id: int) -> str | None:
        """Why the trial waits for slots, if it does."""
        with self._lock:
            return self._reasons.get(trial_id)

    def impossible_placement(self, config: ExperimentConfig) -> str | None:
        """Why trials of ``config`` could never be placed on this cluster, if so."""
        resources = config.resources
        return never_fits(resources.slots_per_trial, self.total_slots, resources.max_slots)


def _searcher_metric(metadata: dict[str, object], metric: str) -> float | None:
    """The searcher metric of the validation a checkpoint follows (from its metadata)."""
    validation = metadata.get("validation_metrics")
    value = validation.get(metric) if isinstance(validation, dict) else None
    return float(value) if isinstance(value, int | float) else None
