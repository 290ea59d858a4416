"""The engine's store on the master's schema: SQLite (local mode, a small master) or PostgreSQL."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

from sqlalchemy import select

from pedl.db import checkpoints as checkpoints_repo
from pedl.db import experiments as experiments_repo
from pedl.db import searcher as searcher_repo
from pedl.db import trials as trials_repo
from pedl.db._database import Database
from pedl.db._models import Checkpoint, Trial
from pedl.engine import (
    Action,
    AppendSearcherEvent,
    CreateTrial,
    SetExperimentState,
    SetProgress,
    SetTrialState,
    StoredExperiment,
    TrialRecord,
)
from pedl.storage import CheckpointSummary, checkpoint_objectives
from pedl.vocabulary import CheckpointState, ExperimentState, TrialError, searcher_metric_of


class SQLExperimentStore:
    """:class:`pedl.engine.ExperimentStore` over a :class:`Database`.

    One write transaction per :meth:`apply`; one read transaction per :meth:`load`.
    """

    def __init__(self, database: Database) -> None:
        self._db = database

    def load(self, experiment_id: int) -> StoredExperiment:
        with self._db.session() as session:
            experiment = experiments_repo.get_experiment(session, experiment_id)
            events = [
                dict(row.event)
                for row in searcher_repo.list_searcher_events(session, experiment_id)
            ]
            trials = trials_repo.all_trials(session, experiment_id)
            rows = session.execute(
                select(
                    Checkpoint.uuid,
                    Checkpoint.trial_id,
                    Checkpoint.total_batches,
                    Checkpoint.metadata_,
                )
                .join(Trial, Trial.id == Checkpoint.trial_id)
                .where(
                    Trial.experiment_id == experiment_id,
                    Checkpoint.state == CheckpointState.COMPLETED,
                )
                .order_by(Checkpoint.id)
            ).all()
            metric = experiment.searcher_metric
            objectives = _objective_names(experiment.config)
            checkpoints = [
                CheckpointSummary(
                    storage_id=uuid,
                    trial_id=trial_id,
                    total_batches=batches,
                    metric=searcher_metric_of(metadata, metric) if metric else None,
                    objectives=checkpoint_objectives(metadata, objectives),
                )
                for uuid, trial_id, batches, metadata in rows
            ]
            batches_of = {c.storage_id: c.total_batches for c in checkpoints}
            # Retention never sees what the model registry holds: it is never deleted.
            registered = checkpoints_repo.registered_uuids(session, list(batches_of))
            checkpoints = [c for c in checkpoints if c.storage_id not in registered]
            # What a continued search hears of the trials its log has not created again
            # (none outside a continuation: no query then).
            created = {int(e["request_id"]) for e in events if e.get("kind") == "trial_created"}
            carried = [
                t.id
                for t in trials
                if t.request_id is not None
                and t.request_id.isdigit()
                and int(t.request_id) not in created
            ]
            latest = trials_repo.latest_validations(session, carried) if metric else {}
            records = [
                TrialRecord(
                    trial_id=t.id,
                    request_id=int(t.request_id),
                    hparams=dict(t.hparams),
                    seed=t.seed,
                    state=t.state,
                    restarts=t.restarts,
                    latest_checkpoint=t.latest_checkpoint_uuid,
                    warm_start=t.warm_start_checkpoint_uuid,
                    latest_checkpoint_batches=batches_of.get(t.latest_checkpoint_uuid or ""),
                    outcome=t.outcome,
                    error=TrialError.from_dict(t.error) if t.error else None,
                    validation_metric=(
                        searcher_metric_of({"validation_metrics": latest[t.id]}, metric)
                        if metric and t.id in latest
                        else None
                    ),
                )
                for t in trials
                if t.request_id is not None and t.request_id.isdigit()
            ]
            return StoredExperiment(
                experiment_id=experiment_id,
                config=dict(experiment.config),
                state=experiment.state,
                events=events,
                trials=records,
                checkpoints=checkpoints,
            )

    def apply(self, experiment_id: int, actions: Sequence[Action]) -> list[tuple[int, int]]:
        created: list[tuple[int, int]] = []
        if not any(isinstance(a, _RECORDED) for a in actions):
            return created
        with self._db.session(write=True, serialize=True) as session:
            events = [a.event for a in actions if isinstance(a, AppendSearcherEvent)]
            if events:
                searcher_repo.append_searcher_events(session, experiment_id, events)
            for action in actions:
                if isinstance(action, CreateTrial):
                    trial = trials_repo.get_trial_by_request(
                        session, experiment_id, str(action.request_id)
                    )
                    if trial is None:
                        trial, _token = trials_repo.create_trial(
                            session,
                            experiment_id=experiment_id,
                            hparams=action.hparams,
                            seed=action.seed,
                            request_id=str(action.request_id),
                        )
                        trial.warm_start_checkpoint_uuid = action.warm_start
                        trial.parent_trial_id = action.parent_trial_id
                        trial.parent_batches = action.parent_batches
                        trial.changed_hparams = action.changed_hparams
                    created.append((action.request_id, trial.id))
                elif isinstance(action, SetTrialState):
                    trial = trials_repo.set_trial_state(session, action.trial_id, action.state)
                    if action.outcome is not None:
                        trial.outcome = action.outcome
                        trial.error = action.error.to_dict() if action.error else None
                    if action.restarts is not None:
                        trial.restarts = action.restarts
                elif isinstance(action, SetExperimentState):
                    experiment = experiments_repo.set_experiment_state(
                        session, experiment_id, action.state
                    )
                    if action.state == ExperimentState.ERROR:
                        experiment.error = action.error
                elif isinstance(action, SetProgress):
                    experiments_repo.set_experiment_progress(
                        session, experiment_id, action.progress
                    )
        return created

    def mark_checkpoints_deleted(self, storage_ids: Sequence[str]) -> None:
        with self._db.session(write=True, serialize=True) as session:
            checkpoints_repo.mark_checkpoints_deleted(session, list(storage_ids))

    def claim_checkpoints_for_deletion(self, storage_ids: Sequence[str]) -> list[str]:
        """Mark DELETED those of these checkpoints no model version holds and return them,
        before their files are removed (:func:`checkpoints.claim_for_deletion`)."""
        with self._db.session(write=True, serialize=True) as session:
            return checkpoints_repo.claim_for_deletion(session, list(storage_ids))

    def release_checkpoints(self, storage_ids: Sequence[str]) -> None:
        """Claimed checkpoints whose files stayed: COMPLETED again, listed
        (:func:`checkpoints.release_claimed`)."""
        with self._db.session(write=True, serialize=True) as session:
            checkpoints_repo.release_claimed(session, list(storage_ids))


_RECORDED = (AppendSearcherEvent, CreateTrial, SetTrialState, SetExperimentState, SetProgress)


def _objective_names(config: Mapping[str, Any]) -> list[str]:
    """The objectives of a stored config's ``searcher.metrics`` (empty without it)."""
    searcher = config.get("searcher")
    objectives = searcher.get("metrics") if isinstance(searcher, Mapping) else None
    if not isinstance(objectives, list):
        return []
    return [str(o["name"]) for o in objectives if isinstance(o, Mapping) and "name" in o]
