"""The repository layer, run against SQLite and PostgreSQL alike."""

from __future__ import annotations

import math
import threading
import uuid
from collections.abc import Callable
from datetime import UTC, datetime, timedelta

import pytest
from sqlalchemy import delete, func, select, text
from sqlalchemy.exc import IntegrityError

from pedl.db import (
    Checkpoint,
    ConflictError,
    Database,
    LogLine,
    Metric,
    MetricRow,
    ModelDefinition,
    NotFoundError,
    Trial,
    TrialLog,
    checkpoints,
    experiments,
    logs,
    metrics,
    searcher,
    trials,
)
from pedl.vocabulary import (
    CheckpointState,
    ExperimentAction,
    ExperimentState,
    IllegalTransitionError,
    MetricKind,
    TrialState,
)
from tests.waits import scaled, until

from .helpers import make_archive

TRAINING = MetricKind.TRAINING
VALIDATION = MetricKind.VALIDATION


def _experiment(database: Database, *, metric: str | None = "loss", smaller: bool = True) -> int:
    with database.session(write=True) as session:
        row = experiments.create_experiment(
            session,
            config={"searcher": {"metric": metric}},
            config_text="searcher: {}",
            model_definition=make_archive(),
            owner="alice",
            searcher_metric=metric,
            smaller_is_better=smaller,
        )
        return row.id


def _trial(database: Database, experiment_id: int) -> int:
    with database.session(write=True) as session:
        trial, _token = trials.create_trial(
            session, experiment_id=experiment_id, hparams={"lr": 0.5}, seed=3
        )
        return trial.id


def _count(database: Database, model: type[Metric] | type[TrialLog], trial_id: int) -> int:
    with database.session() as session:
        return session.scalar(select(func.count()).where(model.trial_id == trial_id)) or 0


def test_experiment_crud(database: Database) -> None:
    archive = make_archive({"a.py": b"x = 1\n"})
    with database.session(write=True) as session:
        created = experiments.create_experiment(
            session,
            config={"name": "e"},
            config_text="name: e\n",
            model_definition=archive,
            owner="bob",
            activate=False,
            name="e",
        )
    with database.session() as session:
        got = experiments.get_experiment(session, created.id)
        assert (got.name, got.owner, got.state) == ("e", "bob", ExperimentState.PAUSED)
        assert got.config == {"name": "e"} and got.created_at.tzinfo is not None
        definition = experiments.get_model_definition(session, created.id)
        assert definition.archive == archive and definition.size == len(archive)
        rows, total = experiments.list_experiments(session, states=[ExperimentState.ACTIVE])
        assert (rows, total) == ([], 0)
        rows, total = experiments.list_experiments(session)
        assert [r.id for r in rows] == [created.id] and total == 1
        with pytest.raises(NotFoundError, match="experiment 999999 not found"):
            experiments.get_experiment(session, 999999)
    with database.session(write=True) as session:
        experiments.set_experiment_progress(session, created.id, 1.7)
        assert experiments.get_experiment(session, created.id).progress == 1.0


def test_experiment_state_changes_and_delete(database: Database) -> None:
    experiment_id = _experiment(database)
    trial_id = _trial(database, experiment_id)
    with database.session(write=True) as session:
        paused = experiments.apply_experiment_action(session, experiment_id, ExperimentAction.PAUSE)
        assert paused.state == ExperimentState.PAUSED
        with pytest.raises(ConflictError, match="cancel or kill it first"):
            experiments.delete_experiment(session, experiment_id)
    with database.session(write=True) as session:
        experiments.apply_experiment_action(session, experiment_id, ExperimentAction.KILL)
        with pytest.raises(IllegalTransitionError, match="cannot pause"):
            experiments.apply_experiment_action(session, experiment_id, ExperimentAction.PAUSE)
        ended = experiments.set_experiment_state(session, experiment_id, ExperimentState.CANCELED)
        assert ended.ended_at is not None
    with database.session(write=True) as session:
        experiments.delete_experiment(session, experiment_id)
    with database.session() as session:
        assert session.get(Trial, trial_id) is None  # cascaded
        assert session.get(ModelDefinition, experiment_id) is None


def test_trial_tokens_are_scoped_and_hashed(database: Database) -> None:
    experiment_id = _experiment(database)
    with database.session(write=True) as session:
        first, token1 = trials.create_trial(
            session, experiment_id=experiment_id, hparams={}, seed=1
        )
        second, token2 = trials.create_trial(
            session, experiment_id=experiment_id, hparams={}, seed=2, request_id="r2"
        )
        assert token1 != token2 and len(token1) >= 40
        assert first.token_hash == trials.hash_token(token1) and token1 not in first.token_hash
    with database.session(write=True) as session:
        assert trials.trial_id_for_token(session, token1) == first.id
        assert trials.trial_id_for_token(session, token2) == second.id
        assert trials.trial_id_for_token(session, "nope") is None
        rotated = trials.rotate_trial_token(session, first.id)
    with database.session() as session:
        assert trials.trial_id_for_token(session, token1) is None
        assert trials.trial_id_for_token(session, rotated) == first.id
    with database.session(write=True) as session, pytest.raises(NotFoundError):
        trials.create_trial(session, experiment_id=987654, hparams={}, seed=1)


def test_trial_state_and_restarts(database: Database) -> None:
    trial_id = _trial(database, _experiment(database))
    with database.session(write=True) as session:
        trials.set_trial_state(session, trial_id, TrialState.QUEUED)
        trials.set_trial_state(session, trial_id, TrialState.RUNNING)
        assert trials.record_trial_restart(session, trial_id).restarts == 1
        done = trials.set_trial_state(session, trial_id, TrialState.COMPLETED)
        assert done.ended_at is not None
    with database.session(write=True) as session:
        with pytest.raises(IllegalTransitionError):
            trials.set_trial_state(session, trial_id, TrialState.RUNNING)
        rows, total = trials.list_trials(
            session,
            trials.get_trial(session, trial_id).experiment_id,
            states=[TrialState.COMPLETED],
        )
        assert [r.id for r in rows] == [trial_id] and total == 1


def test_metric_upsert_is_idempotent(database: Database) -> None:
    trial_id = _trial(database, _experiment(database))
    batch = [
        MetricRow(kind=TRAINING, total_batches=b, metrics={"loss": 1.0 / b}, total_records=b * 32)
        for b in range(100, 1100, 100)
    ] + [MetricRow(kind=VALIDATION, total_batches=500, metrics={"loss": 0.3})]
    with database.session(write=True) as session:
        assert metrics.upsert_metrics(session, trial_id, batch) == 11
    assert _count(database, Metric, trial_id) == 11
    # A resumed trial re-reports an overlapping window: same keys, one changed value.
    resent = [*batch[4:], MetricRow(kind=TRAINING, total_batches=500, metrics={"loss": 9.0})]
    with database.session(write=True) as session:
        metrics.upsert_metrics(session, trial_id, resent)
    assert _count(database, Metric, trial_id) == 11
    with database.session() as session:
        rows = metrics.list_metrics(session, trial_id, kind=TRAINING, after_batches=400, limit=2)
        assert [(r.total_batches, r.metrics["loss"]) for r in rows] == [(500, 9.0), (600, 1 / 600)]
        assert trials.get_trial(session, trial_id).total_batches == 1000
        assert trials.get_trial(session, trial_id).best_validation == pytest.approx(0.3)
        assert metrics.validation_metrics_at(session, trial_id, 500) == {"loss": 0.3}


def test_metric_upsert_from_concurrent_threads(database: Database) -> None:
    trial_ids = [_trial(database, _experiment(database)) for _ in range(4)]

    def report(trial_id: int) -> None:
        for start in range(0, 200, 20):
            rows = [
                MetricRow(kind=TRAINING, total_batches=b, metrics={"loss": float(b)})
                for b in range(start, start + 20)
            ]
            with database.session(write=True) as session:
                metrics.upsert_metrics(session, trial_id, rows)

    threads = [threading.Thread(target=report, args=(t,)) for t in trial_ids for _ in range(2)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()
    assert [_count(database, Metric, t) for t in trial_ids] == [200] * 4


def _one_row(database: Database, trial_id: int) -> None:
    with database.session(write=True) as session:
        metrics.upsert_metrics(
            session, trial_id, [MetricRow(kind=TRAINING, total_batches=1, metrics={"loss": 1.0})]
        )


def test_metric_rows_need_their_trial_and_go_with_it(database: Database) -> None:
    """A foreign key on SQLite, statement triggers on PostgreSQL (migration 0018): same rules."""
    experiment_id = _experiment(database)
    kept, deleted = _trial(database, experiment_id), _trial(database, experiment_id)
    missing = deleted + 1000
    with pytest.raises(IntegrityError) as refused:
        _one_row(database, missing)
    if database.dialect == "postgresql":
        assert f"Key (trial_id)=({missing}) is not present" in str(refused.value)
    assert _count(database, Metric, missing) == 0
    for trial_id in (kept, deleted):
        _one_row(database, trial_id)
    with database.session(write=True) as session:
        session.execute(delete(Trial).where(Trial.id == deleted))
    assert (_count(database, Metric, kept), _count(database, Metric, deleted)) == (1, 0)
    # An experiment's deletion cascades to its trials, and on to their rows.
    other = _trial(database, _experiment(database))
    _one_row(database, other)
    with database.session(write=True) as session:
        experiments.apply_experiment_action(session, experiment_id, ExperimentAction.KILL)
        experiments.set_experiment_state(session, experiment_id, ExperimentState.CANCELED)
        experiments.delete_experiment(session, experiment_id)
    assert (_count(database, Metric, kept), _count(database, Metric, other)) == (0, 1)


def _lock_waits(database: Database) -> int:
    with database.session() as session:
        query = (
            "SELECT count(*) FROM pg_stat_activity"
            " WHERE wait_event_type = 'Lock' AND datname = current_database()"
        )
        return session.execute(text(query)).scalar_one()


def test_metric_rows_and_their_trials_deletion_wait_for_each_other(database: Database) -> None:
    """PostgreSQL's trial check locks the trial as a foreign key would: rows written while
    their trial is being deleted never outlive it, whichever transaction comes first."""
    if database.dialect != "postgresql":
        pytest.skip("SQLite has one writer at a time")
    experiment_id = _experiment(database)
    errors: list[BaseException] = []

    def in_thread(work: Callable[[], None]) -> threading.Thread:
        def run() -> None:
            try:
                work()
            except BaseException as error:  # handed to the test's thread
                errors.append(error)

        thread = threading.Thread(target=run)
        thread.start()
        return thread

    def delete_trial(trial_id: int) -> Callable[[], None]:
        def work() -> None:
            with database.session(write=True) as session:
                session.execute(delete(Trial).where(Trial.id == trial_id))

        return work

    # The rows' transaction first: the deletion waits for it, then deletes its rows too.
    first = _trial(database, experiment_id)
    with database.session(write=True) as session:
        metrics.upsert_metrics(
            session, first, [MetricRow(kind=TRAINING, total_batches=1, metrics={"loss": 1.0})]
        )
        deleting = in_thread(delete_trial(first))
        until(lambda: _lock_waits(database), "the deletion to wait for the rows' transaction")
    deleting.join(scaled(30))
    assert not deleting.is_alive() and errors == []
    assert _count(database, Metric, first) == 0

    # The deletion first: the rows wait for it, then fail; nothing is left behind.
    second = _trial(database, experiment_id)
    with database.session(write=True) as session:
        session.execute(delete(Trial).where(Trial.id == second))
        writing = in_thread(lambda: _one_row(database, second))
        until(lambda: _lock_waits(database), "the rows to wait for the trial's deletion")
    writing.join(scaled(30))
    assert not writing.is_alive()
    assert [type(error) for error in errors] == [IntegrityError]
    assert _count(database, Metric, second) == 0


def test_logs_are_idempotent_by_seq(database: Database) -> None:
    trial_id = _trial(database, _experiment(database))
    stamp = datetime(2024, 5, 1, 12, 0, tzinfo=UTC) + timedelta(hours=5)
    lines = [LogLine(seq=i, message=f"line {i}", timestamp=stamp) for i in range(5)]
    with database.session(write=True) as session:
        assert logs.append_logs(session, trial_id, lines) == 5
    with database.session(write=True) as session:
        more = [*lines[3:], LogLine(seq=5, message="line 5", level="INFO", stream="stdout")]
        assert logs.append_logs(session, trial_id, more) == 1
    assert _count(database, TrialLog, trial_id) == 6
    with database.session() as session:
        page = logs.list_logs(session, trial_id, offset=2, limit=3)
        assert [line.seq for line in page] == [2, 3, 4]
        assert page[0].timestamp == stamp
        tail = logs.list_logs(session, trial_id, after_seq=4)
        assert [(t.seq, t.level, t.stream) for t in tail] == [(5, "INFO", "stdout")]


def test_checkpoints_latest_and_best(database: Database) -> None:
    experiment_id = _experiment(database, metric="acc", smaller=False)
    trial_id = _trial(database, experiment_id)
    uuids = [str(uuid.uuid4()) for _ in range(3)]
    with database.session(write=True) as session:
        metrics.upsert_metrics(
            session,
            trial_id,
            [
                MetricRow(kind=VALIDATION, total_batches=100, metrics={"acc": 0.5}),
                MetricRow(kind=VALIDATION, total_batches=200, metrics={"acc": 0.9}),
                MetricRow(kind=VALIDATION, total_batches=300, metrics={"acc": "NaN"}),
            ],
        )
        for batches, ckpt in zip((100, 200, 300), uuids, strict=True):
            checkpoints.register_checkpoint(
                session,
                trial_id,
                uuid=ckpt,
                total_batches=batches,
                metadata={"framework": "keras"},
                resources={"weights.h5": batches},
            )
    with database.session() as session:
        trial = trials.get_trial(session, trial_id)
        assert trial.latest_checkpoint_uuid == uuids[2]
        assert trial.best_checkpoint_uuid == uuids[1]  # larger is better; NaN ignored
        assert trial.best_validation == pytest.approx(0.9)
        rows, total = checkpoints.list_checkpoints(session, experiment_id=experiment_id)
        assert total == 3 and [c.uuid for c, _ in rows] == uuids
        assert {exp for _, exp in rows} == {experiment_id}
    with database.session(write=True) as session:
        # marking the latest one deleted moves "latest" back
        checkpoints.register_checkpoint(
            session,
            trial_id,
            uuid=uuids[2],
            total_batches=300,
            metadata={},
            resources={},
            state=CheckpointState.DELETED,
        )
        assert trials.get_trial(session, trial_id).latest_checkpoint_uuid == uuids[1]
        with pytest.raises(ConflictError, match="registered at 300 batches"):
            checkpoints.register_checkpoint(
                session, trial_id, uuid=uuids[2], total_batches=1, metadata={}, resources={}
            )
    other = _trial(database, experiment_id)
    with database.session(write=True) as session, pytest.raises(ConflictError) as info:
        checkpoints.register_checkpoint(
            session, other, uuid=uuids[0], total_batches=100, metadata={}, resources={}
        )
    assert info.value.field == "uuid"
    with database.session() as session:
        assert checkpoints.get_checkpoint(session, uuids[0]).resources == {"weights.h5": 100}
        assert session.scalar(select(func.count()).select_from(Checkpoint)) == 3
        with pytest.raises(NotFoundError):
            checkpoints.get_checkpoint(session, str(uuid.uuid4()))


def test_searcher_event_log_and_snapshot(database: Database) -> None:
    experiment_id = _experiment(database)
    with database.session(write=True) as session:
        assert searcher.append_searcher_events(session, experiment_id, [{"e": 1}, {"e": 2}]) == [
            1,
            2,
        ]
        assert searcher.load_searcher_snapshot(session, experiment_id) is None
        searcher.save_searcher_snapshot(session, experiment_id, event_seq=2, state={"n": 2})
    with database.session(write=True) as session:
        assert searcher.append_searcher_events(session, experiment_id, [{"e": 3}]) == [3]
        searcher.save_searcher_snapshot(session, experiment_id, event_seq=3, state={"n": 3})
    with database.session() as session:
        snapshot = searcher.load_searcher_snapshot(session, experiment_id)
        assert snapshot is not None and (snapshot.event_seq, snapshot.state) == (3, {"n": 3})
        after = searcher.list_searcher_events(session, experiment_id, after_seq=1)
        assert [(e.seq, e.event) for e in after] == [(2, {"e": 2}), (3, {"e": 3})]


def test_non_finite_metric_values_round_trip_as_strings(database: Database) -> None:
    trial_id = _trial(database, _experiment(database))
    with database.session(write=True) as session:
        metrics.upsert_metrics(
            session,
            trial_id,
            [MetricRow(kind=TRAINING, total_batches=1, metrics={"a": "NaN", "b": math.pi})],
        )
    with database.session() as session:
        (row,) = metrics.list_metrics(session, trial_id)
        assert row.metrics == {"a": "NaN", "b": math.pi}


_SPELLINGS = [
    0.1, 1 / 3, 1e16, 1.5e16, 1e-7, 2e-320, 5e-324, 1e300, -1e300, -0.0, 123456.789,
    9007199254740993, None,
]  # fmt: skip


def test_metric_values_round_trip_exactly_whatever_their_spelling(database: Database) -> None:
    """The batch's JSON text is written by pydantic's serializer (``1e-7``, not Python's
    ``1e-07``): every value comes back as the same number, non-ASCII and quoted names too
    (read as the API reads them: PostgreSQL's ``jsonb`` gives floats from 1e16 on back as
    integers, which ``as_floats`` mends)."""
    trial_id = _trial(database, _experiment(database))
    sent = {f"m{i}": value for i, value in enumerate(_SPELLINGS)}
    sent |= {"é ü 名": 0.25, 'say "hi"': 2.0, "NaN": 1.0}
    with database.session(write=True) as session:
        metrics.upsert_metrics(
            session, trial_id, [MetricRow(kind=TRAINING, total_batches=1, metrics=sent)]
        )
    with database.session() as session:
        (row,) = metrics.list_metrics(session, trial_id)
    stored = metrics.as_floats(row.metrics)
    assert stored == sent
    for name, value in sent.items():  # the same type too: an int stays an int
        assert type(stored[name]) is type(value), name


def test_a_name_the_fast_serializer_cannot_write_takes_json_dumps(database: Database) -> None:
    """A lone surrogate (which no UTF-8 text holds) is left to ``json.dumps``, which escapes
    it: SQLite stores it; PostgreSQL refuses it, as it did before the serializer."""
    trial_id = _trial(database, _experiment(database))
    row = MetricRow(kind=TRAINING, total_batches=1, metrics={"a\ud800": 1.0})
    if database.engine.dialect.name == "postgresql":
        with pytest.raises(Exception, match="surrogate"), database.session(write=True) as s:
            metrics.upsert_metrics(s, trial_id, [row])
        return
    with database.session(write=True) as session:
        metrics.upsert_metrics(session, trial_id, [row])
    with database.session() as session:
        (stored,) = metrics.list_metrics(session, trial_id)
    assert stored.metrics == {"a\ud800": 1.0}
