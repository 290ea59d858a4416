"""Local mode: an experiment run in this process, with no master.

Local mode is the engine (:class:`pedl.engine.ExperimentDriver`) with an in-process launcher:
trials run one after another, through the same :func:`pedl.exec.run_attempt`, controllers
and core context as on the cluster, the context on local mode's trial backend
(:class:`LocalBackend`). The record is the master's schema on a SQLite file in the run's
directory (``experiment.db``), written through the same store as the master's, so
``pedl master --db-url sqlite:///DIR/experiment.db`` can open a local run. A killed run
resumes with ``pedl experiment resume DIR``: the engine is rebuilt from that record and
every unfinished trial continues from its latest checkpoint.
"""

from __future__ import annotations

import contextlib
import getpass
import logging
import os
import shutil
import sys
import threading
from collections.abc import Callable, Iterator, Mapping, Sequence
from dataclasses import dataclass
from datetime import datetime
from pathlib import Path
from typing import Any, Protocol

import yaml

from pedl import core, model_def
from pedl._tf_noise import is_tf_noise
from pedl.config import OPEN_LENGTH, ConfigError, ConfigIssue, ExperimentConfig, parse_config
from pedl.db import Database, MetricRow, SQLExperimentStore
from pedl.db import checkpoints as checkpoints_repo
from pedl.db import experiments as experiments_repo
from pedl.db import metrics as metrics_repo
from pedl.db import system_metrics as system_repo
from pedl.db import trials as trials_repo
from pedl.db.system_metrics import SystemSample
from pedl.engine import (
    Action,
    DeleteCheckpoints,
    ExperimentDriver,
    LogTrial,
    delete_checkpoints,
    with_default_storage,
)
from pedl.exec import (
    HEARTBEAT_TIMEOUT_SECONDS,
    AttemptResult,
    Gang,
    Sample,
    SystemMetricsReporter,
    gang_environments,
    pick_ports,
    run_attempt,
    start_sampling,
)
from pedl.local._chief_link import ChiefLink
from pedl.local._config import load_run_config
from pedl.local._run_log import FILE_ONLY
from pedl.local._worker import TRIAL_ENV, trial_description
from pedl.searcher import RemoteSearchMethod, unavailable_reason
from pedl.storage import (
    CheckpointSummary,
    SharedFSStorage,
    checkpoint_objectives,
    make_storage,
    storage_unavailable_reason,
)
from pedl.vocabulary import (
    ExperimentState,
    MetricKind,
    TrialError,
    TrialOutcome,
    TrialState,
    searcher_metric_of,
)

logger = logging.getLogger("pedl.local")

CONFIG_FILE = "experiment.yaml"
STORE_FILE = "experiment.db"
CODE_DIR = "model_def"
CHECKPOINT_DIR = "checkpoints"


class NotARunDirectoryError(ValueError):
    """The directory given to ``resume`` is not a local experiment's directory."""


@dataclass(frozen=True)
class LocalTrial:
    """A trial of a local experiment, as the display and the summary see it."""

    id: int
    hparams: dict[str, Any]
    state: TrialState
    restarts: int
    outcome: TrialOutcome | None
    error: TrialError | None


class TrialDisplay(Protocol):
    """What the runner tells whoever shows progress (a terminal, or nothing in tests)."""

    def trial_started(self, trial: LocalTrial, target_batches: int | None) -> None: ...

    def trial_progress(self, trial_id: int, batches: int, metrics: Mapping[str, float]) -> None: ...

    def trial_finished(self, trial: LocalTrial) -> None: ...


class _NoDisplay:
    def trial_started(self, trial: LocalTrial, target_batches: int | None) -> None:
        pass

    def trial_progress(self, trial_id: int, batches: int, metrics: Mapping[str, float]) -> None:
        pass

    def trial_finished(self, trial: LocalTrial) -> None:
        pass


@dataclass(frozen=True)
class TrialSummary:
    trial_id: int
    hparams: dict[str, Any]
    state: TrialState
    outcome: TrialOutcome | None
    best_metric: float | None
    best_checkpoint: Path | None
    """The best checkpoint's directory, where the checkpoint storage is a local one."""
    best_checkpoint_location: str | None
    """Where the best checkpoint is, in any storage: a path or a URL (``s3://...``)."""
    error: TrialError | None


@dataclass(frozen=True)
class ExperimentSummary:
    directory: Path
    state: ExperimentState  # COMPLETED, PAUSED (interrupted, resumable), ERROR, CANCELED
    error: str | None
    metric: str
    smaller_is_better: bool
    trials: list[TrialSummary]

    @property
    def best_trial(self) -> TrialSummary | None:
        scored = [t for t in self.trials if t.best_metric is not None]
        if not scored:
            return None
        sign = 1.0 if self.smaller_is_better else -1.0
        return min(scored, key=lambda t: sign * (t.best_metric or 0.0))


class LocalExperiment:
    """A local experiment directory: its config, code, record, and checkpoints."""

    def __init__(self, directory: str | Path, *, display: TrialDisplay | None = None) -> None:
        self.directory = Path(directory)
        if (
            not (self.directory / CONFIG_FILE).is_file()
            or not (self.directory / STORE_FILE).is_file()
        ):
            raise NotARunDirectoryError(
                f"{self.directory} is not a local experiment's directory (it has no "
                f"{CONFIG_FILE} and {STORE_FILE}); local runs are made by "
                "`pedl experiment create --local` under pedl-local/exp-N"
            )
        # Absolute: a trial changes into its code directory (a script's run, a checkpoint
        # packing the code), where a relative run directory (pedl-local) leads nowhere.
        self.code_dir = (self.directory / CODE_DIR).resolve()
        self.display: TrialDisplay = display or _NoDisplay()
        self.database = Database(f"sqlite:///{(self.directory / STORE_FILE).resolve()}")
        self.database.upgrade()
        self.store = SQLExperimentStore(self.database)
        self.experiment_id = _the_experiment(self.database)
        with self.database.session(write=True, serialize=True) as session:
            experiment = experiments_repo.get_experiment(session, self.experiment_id)
            if experiment.state == ExperimentState.PAUSED:  # interrupted before: go on
                experiments_repo.set_experiment_state(
                    session, self.experiment_id, ExperimentState.ACTIVE
                )
        stored = self.store.load(self.experiment_id)
        self.config: ExperimentConfig = parse_config(stored.config)
        self.storage = make_storage(self.config.checkpoint_storage)
        # A custom searcher runs in a process of its own, from the run's copy of the code.
        self.search_method = (
            RemoteSearchMethod(self.config, code_dir=self.code_dir)
            if self.config.searcher.name == "custom"
            else None
        )
        try:
            self.driver = ExperimentDriver(
                self.config,
                state=stored.state,
                events=stored.events,
                trials=stored.trials,
                checkpoints=stored.checkpoints,
                search_method=self.search_method,
            )
        except BaseException:
            self.close()
            raise
        self._apply(self.driver.start())

    @classmethod
    def create(
        cls,
        config_path: str | Path,
        model_dir: str | Path,
        output_dir: str | Path,
        *,
        overrides: Sequence[str] = (),
        display: TrialDisplay | None = None,
    ) -> LocalExperiment:
        """Validate the config and model directory and lay out a new experiment directory."""
        config = load_run_config(config_path, model_dir, overrides)
        archive = model_def.package(Path(model_dir))
        output = Path(output_dir)
        output.mkdir(parents=True, exist_ok=True)
        directory = _next_directory(output)
        config = with_default_storage(config, directory / CHECKPOINT_DIR)
        _check_runnable_here(config, str(config_path))
        _check_warm_start(config, str(config_path))
        staging = output / f".creating-{directory.name}"
        shutil.rmtree(staging, ignore_errors=True)
        staging.mkdir()
        model_def.copy_tree(model_dir, staging / CODE_DIR)
        text = yaml.safe_dump(config.as_dict(), sort_keys=False)
        (staging / CONFIG_FILE).write_text(text)
        database = Database(f"sqlite:///{(staging / STORE_FILE).resolve()}")
        database.upgrade()
        with database.session(write=True) as session:
            experiments_repo.create_experiment(
                session,
                config=config.as_dict(),
                config_text=Path(config_path).read_text(),
                model_definition=archive,
                owner=_user(),
                name=config.name,
                searcher_metric=config.searcher.metric,
                smaller_is_better=config.searcher.smaller_is_better,
            )
        database.dispose()
        staging.rename(directory)
        return cls(directory, display=display)

    # running -------------------------------------------------------------------------------

    def run(self) -> ExperimentSummary:
        """Run trials until the search is done or a SIGINT/SIGTERM asks to stop."""
        with core.SignalPreemption() as preemption:
            while not preemption.requested() and not self.driver.finished:
                runnable = self.driver.runnable_trials()
                if not runnable:
                    logger.error("no trial can run, yet the search is not done")
                    break
                self._run_trial(runnable[0], preemption)
        if not self.driver.finished:
            with self.database.session(write=True, serialize=True) as session:
                experiments_repo.set_experiment_state(
                    session, self.experiment_id, ExperimentState.PAUSED
                )
            self._apply(self.driver.set_experiment_state(ExperimentState.PAUSED))
        return self.summary()

    def _run_trial(self, trial_id: int, preemption: core.SignalPreemption) -> None:
        self._apply(self.driver.trial_started(trial_id))
        trial = self.trial(trial_id)
        target = self.driver.target_length(trial_id)
        # No max_length (OPEN_LENGTH): the training code decides, so there is no total to show
        batches = (
            self.driver.to_batches(trial_id, target)
            if target is not None and target < OPEN_LENGTH
            else None
        )
        self.display.trial_started(trial, batches)
        with _environment(self.config.environment.env_dict(gpu=False)):
            system = self._sample_system_metrics(trial_id)
            try:
                size = self.config.resources.slots_per_trial
                if size > 1:
                    result = self._run_workers(trial_id, preemption, size)
                else:
                    result = run_attempt(
                        self.code_dir,
                        self.config.entrypoint,
                        lambda: self._context(trial_id, preemption),
                    )
            finally:
                if system is not None:
                    system.stop()
        if result.error is not None and result.outcome == TrialOutcome.ERRORED:
            # The summary says the error once; its traceback is in the run's log file.
            logger.error(
                "trial %d failed: %s\n%s",
                trial_id,
                result.error.summary(),
                result.error.traceback,
                extra=FILE_ONLY,
            )
        self._apply(self.driver.trial_exited(trial_id, result.outcome, result.error))
        self.display.trial_finished(self.trial(trial_id))

    def _sample_system_metrics(self, trial_id: int) -> SystemMetricsReporter | None:
        """Sample this process's system use (with its children's CPU: the worker processes of
        a trial on several slots) while the trial runs, every ``PEDL_SYSTEM_METRICS_INTERVAL``
        seconds, into the run's record as rank 0, as a trial process reports them to the
        master; ``None`` when sampling is off or the variable is wrong (said once)."""

        def store(samples: list[Sample]) -> None:
            rows = [
                SystemSample(
                    rank=0,
                    sampled_at=datetime.fromisoformat(sample["time"]),
                    metrics=dict(sample["metrics"]),
                )
                for sample in samples
            ]
            with self.database.session(write=True) as session:
                system_repo.insert_samples(session, trial_id, rows)

        return start_sampling(store)

    def _run_workers(
        self, trial_id: int, preemption: core.SignalPreemption, size: int
    ) -> AttemptResult:
        """Run a trial of ``slots_per_trial: size`` as ``size`` fresh ``python -m
        pedl.local.worker`` processes, the chief (rank 0) among them, started by the master's
        launcher (:class:`pedl.exec.Gang`, with the same environments), their output on
        stderr prefixed with their rank. The chief's calls that need the run's record (metric
        reports, checkpoint registration, searcher, preemption checks) and its attempt's
        result come over a :class:`ChiefLink` served by a thread of this process. A worker
        that fails or hangs (``PEDL_WORKER_HEARTBEAT_TIMEOUT``, default 60 s) ends the
        attempt (the launcher stops the others) and the trial restarts from its checkpoint
        (``max_restarts``); once the chief is done the others get a short grace."""
        envs = gang_environments(size, pick_ports(size))
        description = trial_description(self._info(trial_id), self.config.as_dict())
        base = {**os.environ, "PYTHONUNBUFFERED": "1", "PEDL_MASTER_PID": str(os.getpid())}
        link = ChiefLink(self.backend(trial_id, preemption))
        gang = Gang(
            heartbeat_timeout=_heartbeat_timeout(),
            on_output=_rank_printer(),
            on_event=lambda line: logger.warning("trial %d: %s", trial_id, line),
        )
        try:
            gang.start(
                [sys.executable, "-m", "pedl.local.worker"],
                [
                    {**base, **env, TRIAL_ENV: description, **(link.env if rank == 0 else {})}
                    for rank, env in enumerate(envs)
                ],
            )
            logger.info(
                "trial %d runs as %d worker processes: %s (rank 0 the chief)",
                trial_id,
                size,
                ", ".join(map(str, gang.pids)),
            )
            while gang.wait(0.5) is None:
                pass
        finally:
            if gang.size and gang.wait(0) is None:  # interrupted (e.g. KeyboardInterrupt)
                gang.kill()
                gang.wait()
            link.close()
        result = link.result
        failure = gang.failure
        if failure is not None and (
            result is None or (result.outcome is TrialOutcome.ERRORED and failure.rank != 0)
        ):
            logger.error("trial %d: the attempt ended: %s", trial_id, failure.reason)
            # the worker's failure, not the model's: restarted like a failed trial process
            error = TrialError("WorkerExited", f"a worker of the trial ended: {failure.reason}")
            result = AttemptResult(TrialOutcome.ERRORED, error, "train")
        elif result is None:
            error = TrialError("WorkerExited", "the chief ended without reporting its attempt")
            result = AttemptResult(TrialOutcome.ERRORED, error, "train")
        return result

    def _info(self, trial_id: int) -> core.TrialInfo:
        with self.database.session() as session:
            row = trials_repo.get_trial(session, trial_id)
        return core.TrialInfo(
            trial_id=trial_id,
            experiment_id=self.experiment_id,
            hparams=dict(row.hparams),
            trial_seed=row.seed,
            config=self.config,
            code_dir=self.code_dir,
            latest_checkpoint=row.latest_checkpoint_uuid,
            warm_start_checkpoint=row.warm_start_checkpoint_uuid,
            extra={"tensorboard_dir": str(self.directory / "tensorboard" / f"trial_{trial_id}")},
        )

    def backend(
        self, trial_id: int, preemption: core.SignalPreemption | None = None
    ) -> LocalBackend:
        """Trial ``trial_id``'s backend on this run's record (``preemption``: the run's
        SIGINT/SIGTERM)."""
        return LocalBackend(self, trial_id, preemption)

    def _context(self, trial_id: int, preemption: core.SignalPreemption) -> core.Context:
        return core.build_context(
            self._info(trial_id), backend=self.backend(trial_id, preemption), storage=self.storage
        )

    def _apply(self, actions: Sequence[Action]) -> None:
        """Carry out the engine's actions: the record in one transaction, then the rest."""
        created = self.store.apply(self.experiment_id, actions)
        for action in actions:
            if isinstance(action, DeleteCheckpoints):
                delete_checkpoints(self.store, self.storage, action.storage_ids)
            elif isinstance(action, LogTrial):
                logger.info("trial %d: %s", action.trial_id, action.message)
        for request_id, trial_id in created:
            self._apply(self.driver.trial_created(request_id, trial_id))

    # the record --------------------------------------------------------------------------

    def trial(self, trial_id: int) -> LocalTrial:
        with self.database.session() as session:
            return _local_trial(trials_repo.get_trial(session, trial_id))

    def checkpoint_path(self, storage_id: str) -> Path | None:
        if isinstance(self.storage, SharedFSStorage):
            return self.storage.path_of(storage_id)
        return None

    def summary(self) -> ExperimentSummary:
        searcher = self.config.searcher
        trials = []
        with self.database.session() as session:
            experiment = experiments_repo.get_experiment(session, self.experiment_id)
            for t in trials_repo.all_trials(session, self.experiment_id):
                best = t.best_checkpoint_uuid
                trials.append(
                    TrialSummary(
                        trial_id=t.id,
                        hparams=dict(t.hparams),
                        state=t.state,
                        outcome=t.outcome,
                        best_metric=t.best_validation,
                        best_checkpoint=self.checkpoint_path(best) if best else None,
                        best_checkpoint_location=self.storage.location(best) if best else None,
                        error=TrialError.from_dict(t.error) if t.error else None,
                    )
                )
        return ExperimentSummary(
            directory=self.directory,
            state=experiment.state,
            error=experiment.error,
            metric=searcher.metric,
            smaller_is_better=searcher.smaller_is_better,
            trials=trials,
        )

    def close(self) -> None:
        if self.search_method is not None:
            self.search_method.close()
        self.database.dispose()


class LocalBackend:
    """Local mode's :class:`pedl.core.TrialBackend` of one trial: reports and checkpoints go
    to the run's record (with the engine told of each checkpoint and completed length), the
    searcher's answers are the engine's, in process, and the trial is asked to stop by a
    SIGINT/SIGTERM (``preemption``) or by the engine."""

    def __init__(
        self,
        experiment: LocalExperiment,
        trial_id: int,
        preemption: core.SignalPreemption | None = None,
    ) -> None:
        self._experiment = experiment
        self._trial_id = trial_id
        self._preemption = preemption

    def write_metrics(
        self,
        kind: MetricKind,
        total_batches: int,
        metrics: Mapping[str, float],
        total_epochs: float | None = None,
    ) -> None:
        row = MetricRow(
            kind=MetricKind(kind),
            total_batches=total_batches,
            metrics=dict(metrics),
            total_epochs=total_epochs,
        )
        with self._experiment.database.session(write=True, serialize=True) as session:
            metrics_repo.upsert_metrics(session, self._trial_id, [row])  # (refreshes the best)
        self._experiment.display.trial_progress(self._trial_id, total_batches, metrics)

    def register_checkpoint(
        self,
        storage_id: str,
        total_batches: int,
        metadata: Mapping[str, Any],
        resources: Mapping[str, int],
    ) -> None:
        experiment = self._experiment
        with experiment.database.session(write=True, serialize=True) as session:
            checkpoints_repo.register_checkpoint(
                session,
                self._trial_id,
                uuid=storage_id,
                total_batches=total_batches,
                metadata=metadata,
                resources=resources,
            )
        summary = CheckpointSummary(
            storage_id=storage_id,
            trial_id=self._trial_id,
            total_batches=total_batches,
            metric=searcher_metric_of(metadata, experiment.config.searcher.metric),
            objectives=checkpoint_objectives(
                metadata, [o.name for o in experiment.config.searcher.objectives]
            ),
        )
        experiment._apply(experiment.driver.checkpoint_completed(summary))

    def next_length(self) -> int | None:
        answer = self._experiment.driver.next_operation(self._trial_id)
        # "wait": trials run one at a time here, so this one stops for now; the engine makes
        # it runnable again when the searcher gives it more work.
        return answer.length if answer.status == "train" else None

    def complete(self, length: int, searcher_metric: float) -> None:
        """Raises ValueError for a length past the largest the searcher asked of the trial,
        as the master refuses it (409)."""
        experiment = self._experiment
        asked = experiment.driver.target_length(self._trial_id)
        if asked is not None and length > asked:
            raise ValueError(f"trial {self._trial_id} was asked to train to {asked}, not {length}")
        metrics = None
        if experiment.config.searcher.multi_objective:  # the objectives: the latest validation's
            with experiment.database.session() as session:
                found = trials_repo.latest_validations(session, [self._trial_id])
                metrics = found.get(self._trial_id)
        experiment._apply(
            experiment.driver.validation_reported(self._trial_id, length, searcher_metric, metrics)
        )

    def should_preempt(self) -> bool:
        if self._preemption is not None and self._preemption.requested():
            return True
        return self._experiment.driver.should_preempt(self._trial_id)


def _check_runnable_here(config: ExperimentConfig, source: str) -> None:
    """The optional dependencies of the searcher and of the checkpoint storage are installed
    (both run in this process)."""
    unavailable = unavailable_reason(config)
    if unavailable is not None:
        raise ConfigError([ConfigIssue("searcher.name", unavailable)], source)
    unavailable = storage_unavailable_reason(config.checkpoint_storage)
    if unavailable is not None:
        raise ConfigError([ConfigIssue("checkpoint_storage.type", unavailable)], source)


def _check_warm_start(config: ExperimentConfig, source: str) -> None:
    """A local run warm-starts from a checkpoint in its checkpoint storage; trial ids belong
    to a master."""
    searcher = config.searcher
    if searcher.source_trial_id is not None:
        message = (
            "names a master's trial, which a local run cannot look up; give "
            "searcher.source_checkpoint_uuid (a checkpoint in checkpoint_storage) instead"
        )
        raise ConfigError([ConfigIssue("searcher.source_trial_id", message)], source)
    uuid = searcher.source_checkpoint_uuid
    if uuid is not None and not make_storage(config.checkpoint_storage).exists(uuid):
        message = f"there is no checkpoint {uuid} in checkpoint_storage"
        raise ConfigError([ConfigIssue("searcher.source_checkpoint_uuid", message)], source)


def _local_trial(row: Any) -> LocalTrial:
    return LocalTrial(
        id=row.id,
        hparams=dict(row.hparams),
        state=row.state,
        restarts=row.restarts,
        outcome=row.outcome,
        error=TrialError.from_dict(row.error) if row.error else None,
    )


def _the_experiment(database: Database) -> int:
    with database.session() as session:
        rows, _ = experiments_repo.list_experiments(session, limit=1)
    if not rows:
        raise NotARunDirectoryError("the run's record holds no experiment")
    return rows[0].id


def _user() -> str:
    try:
        return getpass.getuser()
    except (KeyError, OSError):
        return "local"


@contextlib.contextmanager
def _environment(variables: Mapping[str, str]) -> Iterator[None]:
    """Set the config's environment variables for the duration of a trial, as a process would."""
    saved = {key: os.environ.get(key) for key in variables}
    os.environ.update(variables)
    try:
        yield
    finally:
        for key, value in saved.items():
            if value is None:
                os.environ.pop(key, None)
            else:
                os.environ[key] = value


HEARTBEAT_TIMEOUT_VARIABLE = "PEDL_WORKER_HEARTBEAT_TIMEOUT"
"""Local mode's ``worker_heartbeat_timeout`` (the master's setting of that name)."""


def _heartbeat_timeout() -> float:
    raw = os.environ.get(HEARTBEAT_TIMEOUT_VARIABLE)
    try:
        value = float(raw) if raw else HEARTBEAT_TIMEOUT_SECONDS
    except ValueError:
        value = HEARTBEAT_TIMEOUT_SECONDS
    return value if value > 0 else HEARTBEAT_TIMEOUT_SECONDS


def _rank_printer() -> Callable[[int, str, bytes | None], None]:
    """Print the workers' output on this process's stderr, each line after its rank."""
    lock = threading.Lock()

    def output(rank: int, stream: str, raw: bytes | None) -> None:
        if raw is None:
            return
        text = raw.decode("utf-8", errors="replace").rstrip("\r\n")
        if is_tf_noise(text):  # TensorFlow's start-up lines: the run's log file only
            logger.info("[rank %d] %s", rank, text, extra=FILE_ONLY)
            return
        with lock:
            print(f"[rank {rank}] {text}", file=sys.stderr, flush=True)

    return output


def _next_directory(output: Path) -> Path:
    numbers = [
        int(p.name.split("-", 1)[1])
        for p in output.glob("exp-*")
        if p.name.split("-", 1)[1].isdigit()
    ]
    return output / f"exp-{max(numbers, default=0) + 1}"
