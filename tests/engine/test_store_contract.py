"""The engine's store contract, run over every store: local mode's (the master's schema on a
SQLite file in the run's directory), the master on SQLite, the master on PostgreSQL."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
import yaml
from sqlalchemy import func, select

from pedl.config import parse_config
from pedl.db import Database, SearcherEvent, SQLExperimentStore
from pedl.db import checkpoints as checkpoints_repo
from pedl.db import experiments as experiments_repo
from pedl.db import metrics as metrics_repo
from pedl.db import registry as registry_repo
from pedl.db import trials as trials_repo
from pedl.db.metrics import MetricRow
from pedl.engine import (
    AppendSearcherEvent,
    CreateTrial,
    ExperimentDriver,
    SetExperimentState,
    SetProgress,
    SetTrialState,
    delete_checkpoints,
)
from pedl.local import LocalExperiment
from pedl.storage import SharedFSStorage
from pedl.vocabulary import (
    CheckpointState,
    ExperimentState,
    MetricKind,
    TrialError,
    TrialOutcome,
    TrialState,
)
from tests.master.conftest import _create_pg_database, _drop_pg_database

CONFIG: dict[str, Any] = {
    "name": "contract",
    "hyperparameters": {"global_batch_size": 4, "units": {"type": "categorical", "vals": [1, 2]}},
    "searcher": {
        "name": "grid",
        "metric": "loss",
        "smaller_is_better": True,
        "max_length": {"batches": 8},
    },
    "checkpoint_storage": {"type": "shared_fs", "host_path": "/tmp/pedl-contract"},
}


@pytest.fixture(params=["local", "sqlite", "postgresql"])
def store_db(request: pytest.FixtureRequest, tmp_path: Path) -> Iterator[tuple[Database, int]]:
    """A migrated database holding one experiment of :data:`CONFIG`, and that experiment."""
    if request.param == "local":
        (tmp_path / "model").mkdir()
        (tmp_path / "model" / "__init__.py").write_text("")
        config = tmp_path / "config.yaml"
        config.write_text(yaml.safe_dump(CONFIG))
        exp = LocalExperiment.create(config, tmp_path / "model", tmp_path / "out")
        exp.close()
        # The run's own record (its experiment already started); the tests use a second
        # experiment in the same file, so each starts from an empty log.
        database = Database(f"sqlite:///{exp.directory / 'experiment.db'}")
        with database.session() as session:
            assert session.scalar(select(func.count()).select_from(SearcherEvent)) > 0
        name = None
    elif request.param == "sqlite":
        database = Database(f"sqlite:///{tmp_path / 'master.db'}")
        name = None
    else:
        name, url = _create_pg_database()
        database = Database(url)
    database.upgrade()
    with database.session(write=True) as session:
        experiment = experiments_repo.create_experiment(
            session,
            config=parse_config(CONFIG).as_dict(),
            config_text="{}",
            model_definition=b"",
            owner="test",
            searcher_metric="loss",
        )
        experiment_id = experiment.id
    try:
        yield database, experiment_id
    finally:
        database.dispose()
        if name is not None:
            _drop_pg_database(name)


def test_apply_then_load_round_trips(store_db: tuple[Database, int]) -> None:
    database, experiment_id = store_db
    store = SQLExperimentStore(database)
    created = store.apply(
        experiment_id,
        [
            AppendSearcherEvent({"seq": 0, "kind": "initial_operations"}),
            CreateTrial(1, {"units": 1}, 11),
            CreateTrial(2, {"units": 2}, 22),
            AppendSearcherEvent({"seq": 1, "kind": "trial_created", "request_id": 1}),
            SetProgress(0.25),
        ],
    )
    assert [request for request, _ in created] == [1, 2]
    first, second = (trial_id for _, trial_id in created)
    error = TrialError("ValueError", "bad", "model.py:3", before_progress=True, traceback="tb")
    store.apply(
        experiment_id,
        [
            SetTrialState(first, TrialState.RUNNING),
            SetTrialState(first, TrialState.ERROR, TrialOutcome.ERRORED, error),
            SetTrialState(second, TrialState.ACTIVE, TrialOutcome.ERRORED, error, restarts=2),
            SetExperimentState(ExperimentState.ERROR, "every trial failed"),
        ],
    )
    loaded = store.load(experiment_id)
    assert [e["kind"] for e in loaded.events] == ["initial_operations", "trial_created"]
    by_id = {t.trial_id: t for t in loaded.trials}
    assert by_id[first].state == TrialState.ERROR and by_id[first].hparams == {"units": 1}
    assert by_id[second].restarts == 2 and by_id[second].seed == 22
    assert loaded.state == ExperimentState.ERROR
    with database.session() as session:
        experiment = experiments_repo.get_experiment(session, experiment_id)
        assert experiment.error == "every trial failed"
        assert experiment.progress == 0.25
        trial = trials_repo.get_trial(session, first)
        assert trial.outcome == TrialOutcome.ERRORED
        assert TrialError.from_dict(trial.error or {}) == error


def test_one_event_is_all_or_nothing(store_db: tuple[Database, int]) -> None:
    database, experiment_id = store_db
    store = SQLExperimentStore(database)
    ((_, trial_id),) = store.apply(experiment_id, [CreateTrial(1, {"units": 1}, 1)])
    store.apply(experiment_id, [SetTrialState(trial_id, TrialState.COMPLETED)])
    with pytest.raises(Exception, match="cannot go from COMPLETED to RUNNING"):
        store.apply(
            experiment_id,
            [
                AppendSearcherEvent({"seq": 0, "kind": "initial_operations"}),
                CreateTrial(2, {"units": 2}, 2),
                SetTrialState(trial_id, TrialState.RUNNING),
            ],
        )
    loaded = store.load(experiment_id)
    assert loaded.events == []
    assert [t.request_id for t in loaded.trials] == [1]


def test_checkpoints_load_with_their_metric_until_deleted(store_db: tuple[Database, int]) -> None:
    database, experiment_id = store_db
    store = SQLExperimentStore(database)
    ((_, trial_id),) = store.apply(experiment_id, [CreateTrial(1, {"units": 1}, 1)])
    with database.session(write=True) as session:
        for batches, loss in ((4, 0.5), (8, 0.25)):
            checkpoints_repo.register_checkpoint(
                session,
                trial_id,
                uuid=f"00000000-0000-0000-0000-00000000000{batches}",
                total_batches=batches,
                metadata={"validation_metrics": {"loss": loss}},
                resources={},
            )
    loaded = store.load(experiment_id)
    assert [(c.total_batches, c.metric) for c in loaded.checkpoints] == [(4, 0.5), (8, 0.25)]
    (trial,) = loaded.trials
    assert trial.latest_checkpoint_batches == 8
    store.mark_checkpoints_deleted([loaded.checkpoints[0].storage_id])
    assert [c.total_batches for c in store.load(experiment_id).checkpoints] == [8]


def test_trials_load_with_their_outcome_and_latest_searcher_metric(
    store_db: tuple[Database, int],
) -> None:
    """What a continued search hears of a trial that ended: its outcome and the searcher
    metric of its latest validation (not its best, nor a training metric)."""
    database, experiment_id = store_db
    store = SQLExperimentStore(database)
    created = store.apply(experiment_id, [CreateTrial(1, {"units": 1}, 1), CreateTrial(2, {}, 2)])
    (_, validated), (_, silent) = created
    with database.session(write=True) as session:
        metrics_repo.upsert_metrics(
            session,
            validated,
            [
                MetricRow(MetricKind.VALIDATION, 8, {"loss": 0.75, "accuracy": 0.5}),
                MetricRow(MetricKind.VALIDATION, 4, {"loss": 0.25}),
                MetricRow(MetricKind.TRAINING, 12, {"loss": 0.125}),
            ],
        )
        metrics_repo.upsert_metrics(
            session, silent, [MetricRow(MetricKind.TRAINING, 4, {"loss": 0.5})]
        )
    assert {
        t.trial_id: (t.outcome, t.validation_metric) for t in store.load(experiment_id).trials
    } == {
        validated: (None, 0.75),
        silent: (None, None),
    }
    store.apply(
        experiment_id,
        [
            SetTrialState(validated, TrialState.COMPLETED, TrialOutcome.COMPLETED),
            SetTrialState(silent, TrialState.COMPLETED, TrialOutcome.INVALID_HP),
        ],
    )
    assert {
        t.trial_id: (t.outcome, t.validation_metric) for t in store.load(experiment_id).trials
    } == {
        validated: (TrialOutcome.COMPLETED, 0.75),
        silent: (TrialOutcome.INVALID_HP, None),
    }


def test_a_driver_rebuilt_from_the_store_answers_alike(store_db: tuple[Database, int]) -> None:
    database, experiment_id = store_db
    store = SQLExperimentStore(database)
    config = parse_config(CONFIG)
    driver = ExperimentDriver(config)

    def apply(actions: list[Any]) -> None:
        for request_id, trial_id in store.apply(experiment_id, actions):
            apply(driver.trial_created(request_id, trial_id))

    apply(driver.start())
    first, second = driver.runnable_trials()
    apply(driver.trial_started(first))
    apply(driver.validation_reported(first, 8, 0.1))
    apply(driver.trial_exited(first, TrialOutcome.COMPLETED))
    loaded = store.load(experiment_id)
    rebuilt = ExperimentDriver(
        config,
        state=loaded.state,
        events=loaded.events,
        trials=loaded.trials,
        checkpoints=loaded.checkpoints,
    )
    store.apply(experiment_id, rebuilt.start())
    assert rebuilt.runnable_trials() == driver.runnable_trials() == [second]
    assert rebuilt.progress() == driver.progress() == 0.5
    assert {t.trial_id: t.state for t in store.load(experiment_id).trials} == {
        first: TrialState.COMPLETED,
        second: TrialState.ACTIVE,
    }


class _Unremovable(SharedFSStorage):
    """A real directory storage whose one checkpoint's files cannot be removed (a storage
    error, as an unreachable bucket or a read-only mount gives)."""

    def __init__(self, base: Path, stuck: str) -> None:
        super().__init__(base)
        self.stuck = stuck

    def delete(self, storage_id: str) -> None:
        if storage_id == self.stuck:
            raise PermissionError(f"cannot remove {storage_id}")
        super().delete(storage_id)


def test_deleting_checkpoints_claims_removes_marks_and_keeps_what_stays(
    store_db: tuple[Database, int], tmp_path: Path
) -> None:
    """The one deletion order (pedl.engine.delete_checkpoints, which local mode and the
    master both run): a registered checkpoint is left alone, one whose files cannot be
    removed stays listed (COMPLETED, loaded), the others are gone from storage and record."""
    database, experiment_id = store_db
    store = SQLExperimentStore(database)
    ((_, trial_id),) = store.apply(experiment_id, [CreateTrial(1, {"units": 1}, 1)])
    ids = [f"00000000-0000-0000-0000-00000000000{i}" for i in range(1, 5)]
    gone, stuck, registered, untouched = ids
    storage = _Unremovable(tmp_path / "checkpoints", stuck)
    with database.session(write=True) as session:
        for batches, storage_id in enumerate(ids, 1):
            with storage.store_path(storage_id) as path:
                (path / "weights").write_bytes(b"w")
            checkpoints_repo.register_checkpoint(
                session,
                trial_id,
                uuid=storage_id,
                total_batches=batches,
                metadata={"validation_metrics": {"loss": 1.0 / batches}},
                resources={},
            )
        model = registry_repo.create_model(session, "kept", owner="test")
        registry_repo.register_version(session, model, registered, owner="test", max_versions=9)

    deleted = delete_checkpoints(store, storage, [gone, stuck, registered])

    assert deleted == [gone]
    assert not storage.path_of(gone).exists()
    assert storage.path_of(stuck).is_dir() and storage.path_of(registered).is_dir()
    loaded = store.load(experiment_id)
    # The engine's view leaves out the registered one (never its to delete).
    assert [c.storage_id for c in loaded.checkpoints] == [stuck, untouched]
    with database.session() as session:
        states = {c: checkpoints_repo.get_checkpoint(session, c).state for c in ids}
    assert states == {
        gone: CheckpointState.DELETED,
        stuck: CheckpointState.COMPLETED,
        registered: CheckpointState.COMPLETED,
        untouched: CheckpointState.COMPLETED,
    }
    (trial,) = loaded.trials
    assert trial.latest_checkpoint_batches == 4
