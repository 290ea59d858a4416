"""Local mode: an experiment run in this process, with no master.

The searcher runs in-process behind its event log (kept in the experiment's SQLite file);
trials run one after another through the same controllers and core context as on the
cluster, with local stand-ins for the context parts. A killed run resumes with
``pedl experiment resume DIR``: the searcher is rebuilt from its log and every unfinished
trial continues from its latest checkpoint.
"""

from __future__ import annotations

import contextlib
import logging
import os
import shutil
import traceback
from collections import defaultdict, deque
from collections.abc import Iterator, Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Protocol

import yaml

from pedl import core, model_def
from pedl._trial import TrialOutcome
from pedl.config import ExperimentConfig, Length, load_config, parse_config
from pedl.local._store import LocalStore, TrialRecord
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
from pedl.storage import (
    CheckpointSummary,
    SharedFSStorage,
    checkpoints_to_delete,
    make_storage,
)

logger = logging.getLogger("pedl.local")

CONFIG_FILE = "experiment.yaml"
STORE_FILE = "experiment.db"
CODE_DIR = "model_def"
EXPERIMENT_ID = 1


class TrialDisplay(Protocol):
    """What the runner tells whoever shows progress (a terminal, or nothing in tests)."""

    def trial_started(self, trial: TrialRecord, target_batches: int | None) -> None: ...

    def trial_progress(self, trial_id: int, batches: int, metrics: Mapping[str, float]) -> None: ...

    def trial_finished(self, trial: TrialRecord) -> None: ...


class _NoDisplay:
    def trial_started(self, trial: TrialRecord, target_batches: int | None) -> None:
        pass

    def trial_progress(self, trial_id: int, batches: int, metrics: Mapping[str, float]) -> None:
        pass

    def trial_finished(self, trial: TrialRecord) -> None:
        pass


@dataclass(frozen=True)
class TrialSummary:
    trial_id: int
    hparams: dict[str, Any]
    state: str
    best_metric: float | None
    best_checkpoint: Path | None
    error: str | None


@dataclass(frozen=True)
class ExperimentSummary:
    directory: Path
    state: str  # COMPLETED, PAUSED (interrupted, resumable), ERROR (every trial failed)
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


class _Recorder:
    """The local stand-in for the train and checkpoint parts: writes to the store."""

    def __init__(self, store: LocalStore, trial_id: int, display: TrialDisplay) -> None:
        self._store = store
        self._trial_id = trial_id
        self._display = display

    def write_metrics(
        self, kind: core.MetricKind, total_batches: int, metrics: Mapping[str, float]
    ) -> None:
        self._store.write_metrics(self._trial_id, kind, total_batches, metrics)
        self._display.trial_progress(self._trial_id, total_batches, metrics)

    def register_checkpoint(
        self,
        storage_id: str,
        total_batches: int,
        metadata: Mapping[str, Any],
        resources: Mapping[str, int],
    ) -> None:
        self._store.register_checkpoint(
            self._trial_id, storage_id, total_batches, metadata, resources
        )


class _SearcherSession:
    """The local stand-in for the searcher part: the in-process searcher's queue."""

    def __init__(self, experiment: LocalExperiment, request_id: int) -> None:
        self._experiment = experiment
        self._request_id = request_id

    def next_length(self) -> int | None:
        pending = self._experiment.pending[self._request_id]
        return pending[0] if pending else None

    def complete(self, length: int, searcher_metric: float) -> None:
        pending = self._experiment.pending[self._request_id]
        if pending and pending[0] == length:
            pending.popleft()
        self._experiment.handle(
            self._experiment.searcher.on_validation_completed(
                self._request_id, searcher_metric, length
            )
        )

    def exit_early(self, reason: str) -> None:
        self._experiment.exit_early(self._request_id, ExitedReason.USER_CANCELED)


class LocalExperiment:
    """A local experiment directory: its config, code, record, and checkpoints."""

    def __init__(self, directory: Path, *, display: TrialDisplay | None = None) -> None:
        self.directory = directory
        self.config: ExperimentConfig = load_config(directory / CONFIG_FILE)
        self.code_dir = directory / CODE_DIR
        self.store = LocalStore(directory / STORE_FILE)
        self.storage = make_storage(self.config.checkpoint_storage)
        self.display: TrialDisplay = display or _NoDisplay()
        self.pending: dict[int, deque[int]] = defaultdict(deque)
        self.closed: set[int] = set()
        self.shutdown = False
        self.searcher = SearcherRunner.restore(
            make_search_method(self.config),
            self.store.searcher_events(),
            event_sink=self.store.append_searcher_event,
        )
        self._closed_acknowledged = {
            e["request_id"] for e in self.searcher.events if e["kind"] == "trial_closed"
        }
        if self.store.searcher_events():
            self._rebuild_pending()
        else:
            self.handle(self.searcher.initial_operations())

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
        config = load_config(config_path, overrides)
        output = Path(output_dir)
        output.mkdir(parents=True, exist_ok=True)
        directory = _next_directory(output)
        if "checkpoint_storage" not in config.model_fields_set:
            # Without a storage of its own, a local experiment keeps its checkpoints inside it.
            checkpoints = {
                "type": "shared_fs",
                "host_path": str(directory.resolve() / "checkpoints"),
            }
            config = parse_config({**config.as_dict(), "checkpoint_storage": checkpoints})
        staging = output / f".creating-{directory.name}"
        shutil.rmtree(staging, ignore_errors=True)
        staging.mkdir()
        model_def.copy_tree(model_dir, staging / CODE_DIR)
        (staging / CONFIG_FILE).write_text(yaml.safe_dump(config.as_dict(), sort_keys=False))
        staging.rename(directory)
        return cls(directory, display=display)

    # searcher ------------------------------------------------------------------------------

    def handle(self, operations: Sequence[Operation]) -> None:
        """Act on searcher operations (possibly producing more, handled in turn)."""
        queue = deque(operations)
        while queue:
            op = queue.popleft()
            if isinstance(op, Create):
                if self.store.trial_by_request(op.request_id) is None:
                    self.store.create_trial(op.request_id, op.hparams, op.trial_seed)
                queue.extend(self.searcher.on_trial_created(op.request_id))
            elif isinstance(op, ValidateAfter):
                self.pending[op.request_id].append(op.length)
            elif isinstance(op, Close):
                self.closed.add(op.request_id)
            elif isinstance(op, Shutdown):
                self.shutdown = True

    def _rebuild_pending(self) -> None:
        created = {t.request_id for t in self.store.trials()}
        for op in self.searcher.outstanding_operations:
            if isinstance(op, Create) and op.request_id not in created:
                self.handle([op])
            elif isinstance(op, ValidateAfter):
                self.pending[op.request_id].append(op.length)
            elif isinstance(op, Close):
                self.closed.add(op.request_id)
            elif isinstance(op, Shutdown):
                self.shutdown = True

    def exit_early(self, request_id: int, reason: ExitedReason) -> None:
        self.pending[request_id].clear()
        self.handle(self.searcher.on_trial_exited_early(request_id, reason))

    # running -------------------------------------------------------------------------------

    def run(self) -> ExperimentSummary:
        """Run trials until the search is done or a SIGINT/SIGTERM asks to stop."""
        with core.SignalPreemption() as preemption:
            while not preemption.requested():
                trial = self._next_trial()
                if trial is None:
                    break
                self._run_trial(trial, preemption)
        interrupted = preemption.requested() and self._next_trial() is not None
        self._collect_garbage()
        state = "PAUSED" if interrupted else self._final_state()
        self.store.set_value("state", state)
        return self.summary(state)

    def _next_trial(self) -> TrialRecord | None:
        for trial in self.store.trials():
            if trial.state in ("COMPLETED", "ERROR", "CANCELED"):
                continue
            if self.pending[trial.request_id]:
                return trial
            if trial.request_id in self.closed | self._closed_acknowledged:
                self._finish(trial, "COMPLETED")
        return None

    def _run_trial(self, trial: TrialRecord, preemption: core.SignalPreemption) -> None:
        self.store.set_trial_state(trial.id, "RUNNING")
        self.display.trial_started(trial, self._target_batches(trial))
        while True:
            trial = self.store.trial(trial.id)
            try:
                outcome = self._train(trial, preemption)
            except Exception:
                error = traceback.format_exc()
                logger.error("trial %d failed:\n%s", trial.id, error)
                self.store.set_trial_state(trial.id, "RUNNING", error=error)
                restarts = self.store.add_restart(trial.id)
                if restarts <= self.config.max_restarts and not preemption.requested():
                    logger.warning(
                        "restarting trial %d from its latest checkpoint (restart %d of %d)",
                        trial.id,
                        restarts,
                        self.config.max_restarts,
                    )
                    continue
                self.exit_early(trial.request_id, ExitedReason.ERRORED)
                self._finish(trial, "ERROR")
                return
            break
        if outcome is TrialOutcome.PREEMPTED:
            self.store.set_trial_state(trial.id, "PAUSED")
        elif outcome is TrialOutcome.STOPPED_EARLY or trial.request_id in self.closed:
            self._finish(trial, "COMPLETED")
        else:
            self.store.set_trial_state(trial.id, "ACTIVE")  # waits for more searcher work
        self.display.trial_finished(self.store.trial(trial.id))

    def _finish(self, trial: TrialRecord, state: str) -> None:
        """Record the trial's final state and tell the searcher it is closed."""
        self.store.set_trial_state(trial.id, state)
        if trial.request_id not in self._closed_acknowledged:
            self._closed_acknowledged.add(trial.request_id)
            self.handle(self.searcher.on_trial_closed(trial.request_id))

    def _train(self, trial: TrialRecord, preemption: core.SignalPreemption) -> TrialOutcome:
        definition = model_def.load(self.code_dir, self.config.entrypoint)
        if definition.trial_class is None:
            raise model_def.ModelDefError(
                "local mode runs Trial classes; this model definition has none"
            )
        recorder = _Recorder(self.store, trial.id, self.display)
        info = core.TrialInfo(
            trial_id=trial.id,
            experiment_id=EXPERIMENT_ID,
            hparams=trial.hparams,
            trial_seed=trial.seed,
            config=self.config,
            code_dir=self.code_dir,
            latest_checkpoint=trial.latest_checkpoint,
            extra={"tensorboard_dir": str(self.directory / "tensorboard" / f"trial_{trial.id}")},
        )
        context = core.build_context(
            info,
            metrics=recorder,
            checkpoints=recorder,
            storage=self.storage,
            searcher=_SearcherSession(self, trial.request_id),
            should_preempt=preemption.requested,
        )
        with _environment(self.config.environment.env_dict(gpu=False)):
            controller = definition.trial_class.trial_controller_class.from_definition(
                definition, context
            )
            outcome: TrialOutcome = controller.run()
        return outcome

    def _target_batches(self, trial: TrialRecord) -> int | None:
        pending = self.pending[trial.request_id]
        if not pending:
            return None
        length = Length(unit=self.config.searcher_unit, value=pending[-1])
        if length.unit == "batches":
            return length.value
        batch_size = trial.hparams.get("global_batch_size")
        if not isinstance(batch_size, int) or batch_size <= 0:
            return None
        return length.to_batches(batch_size, self.config.records_per_epoch)

    def _final_state(self) -> str:
        trials = self.store.trials()
        if trials and all(t.state == "ERROR" for t in trials):
            return "ERROR"
        return "COMPLETED"

    # checkpoints and results -------------------------------------------------------------

    def _checkpoint_summaries(self) -> list[CheckpointSummary]:
        metric = self.config.searcher.metric
        return [
            CheckpointSummary(
                storage_id=c.uuid,
                trial_id=c.trial_id,
                total_batches=c.total_batches,
                metric=c.metadata.get("validation_metrics", {}).get(metric),
            )
            for c in self.store.checkpoints()
        ]

    def _collect_garbage(self) -> None:
        storage_config = self.config.checkpoint_storage
        unfinished = [
            t.latest_checkpoint
            for t in self.store.trials()
            if t.state not in ("COMPLETED", "ERROR", "CANCELED") and t.latest_checkpoint
        ]
        doomed = checkpoints_to_delete(
            self._checkpoint_summaries(),
            smaller_is_better=self.config.searcher.smaller_is_better,
            save_trial_latest=storage_config.save_trial_latest,
            save_trial_best=storage_config.save_trial_best,
            save_experiment_best=storage_config.save_experiment_best,
            keep=[c for c in unfinished if c],
        )
        for storage_id in sorted(doomed):
            self.storage.delete(storage_id)
            self.store.mark_checkpoint_deleted(storage_id)

    def checkpoint_path(self, storage_id: str) -> Path | None:
        if isinstance(self.storage, SharedFSStorage):
            return self.storage.path_of(storage_id)
        return None

    def summary(self, state: str | None = None) -> ExperimentSummary:
        searcher = self.config.searcher
        sign = 1.0 if searcher.smaller_is_better else -1.0
        trials = []
        for t in self.store.trials():
            values = [
                row.metrics[searcher.metric]
                for row in self.store.metrics(t.id, core.MetricKind.VALIDATION)
                if searcher.metric in row.metrics
            ]
            best = min(values, key=lambda v: sign * v) if values else None
            scored = [
                c
                for c in self._checkpoint_summaries()
                if c.trial_id == t.id and c.metric is not None
            ]
            best_checkpoint = (
                min(scored, key=lambda c: sign * (c.metric or 0.0)).storage_id if scored else None
            )
            trials.append(
                TrialSummary(
                    trial_id=t.id,
                    hparams=t.hparams,
                    state=t.state,
                    best_metric=best,
                    best_checkpoint=self.checkpoint_path(best_checkpoint)
                    if best_checkpoint
                    else None,
                    error=t.error,
                )
            )
        return ExperimentSummary(
            directory=self.directory,
            state=state or self.store.get_value("state", "ACTIVE"),
            metric=searcher.metric,
            smaller_is_better=searcher.smaller_is_better,
            trials=trials,
        )

    def close(self) -> None:
        self.store.close()


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


def _next_directory(output: Path) -> Path:
    numbers = [
        int(p.name.split("-", 1)[1])
        for p in output.glob("exp-*")
        if p.name.split("-", 1)[1].isdigit()
    ]
    return output / f"exp-{max(numbers, default=0) + 1}"
