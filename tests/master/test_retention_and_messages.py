"""The queries behind ``det e set log-retention`` and ``det master cluster-message``, on both
databases: an ended experiment's trial logs go once its retention has passed (never those of
one kept forever, not ended, or within its days), and at most one cluster-wide message is
current (setting one ends the one before, clearing ends it, one that starts later is
current)."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta

from pedl.db import Database
from pedl.db import cluster_messages as messages_repo
from pedl.db import experiments as experiments_repo
from pedl.db import logs as logs_repo
from pedl.db import trials as trials_repo
from pedl.vocabulary import ExperimentState

from .helpers import make_archive


def _experiment_with_logs(
    database: Database, *, ended: datetime | None, days: int | None
) -> tuple[int, int]:
    with database.session(write=True) as session:
        exp = experiments_repo.create_experiment(
            session,
            config={},
            config_text="{}",
            model_definition=make_archive(),
            owner="alice",
        )
        trial, _ = trials_repo.create_trial(session, experiment_id=exp.id, hparams={}, seed=1)
        lines = [logs_repo.LogLine(seq=seq, message=f"line {seq}") for seq in range(3)]
        logs_repo.append_logs(session, trial.id, lines)
        if ended is not None:
            experiments_repo.set_experiment_state(session, exp.id, ExperimentState.COMPLETED)
            exp.ended_at = ended
        experiments_repo.update_experiment(session, exp.id, log_retention_days=days)
        return exp.id, trial.id


def _lines(database: Database, trial_id: int) -> int:
    with database.session() as session:
        return len(logs_repo.list_logs(session, trial_id))


def test_expired_logs_are_deleted(database: Database) -> None:
    now = datetime(2026, 11, 29, 12, tzinfo=UTC)
    expired = _experiment_with_logs(database, ended=now - timedelta(days=8), days=7)
    within = _experiment_with_logs(database, ended=now - timedelta(days=6), days=7)
    at_once = _experiment_with_logs(database, ended=now - timedelta(seconds=1), days=0)
    forever = _experiment_with_logs(database, ended=now - timedelta(days=900), days=-1)
    unset = _experiment_with_logs(database, ended=now - timedelta(days=900), days=None)
    running = _experiment_with_logs(database, ended=None, days=0)
    with database.session(write=True) as session:
        only = logs_repo.delete_expired_logs(session, now, experiment_id=within[0])
    assert only == 0
    with database.session(write=True) as session:
        assert logs_repo.delete_expired_logs(session, now) == 6
    assert _lines(database, expired[1]) == 0 and _lines(database, at_once[1]) == 0
    for kept in (within, forever, unset, running):
        assert _lines(database, kept[1]) == 3
    with database.session(write=True) as session:
        assert logs_repo.delete_expired_logs(session, now) == 0  # idempotent


def test_one_cluster_message_is_current(database: Database) -> None:
    with database.session() as session:
        assert messages_repo.current_message(session) is None
    now = datetime.now(UTC)
    with database.session(write=True) as session:
        messages_repo.set_message(
            session, "first", start_time=now, end_time=None, created_by="admin"
        )
    with database.session(write=True) as session:
        messages_repo.set_message(
            session,
            "tomorrow",
            start_time=now + timedelta(days=1),
            end_time=now + timedelta(days=2),
            created_by="admin",
        )
    with database.session() as session:
        current = messages_repo.current_message(session)
        assert current is not None and current.message == "tomorrow"
        assert current.end_time == (now + timedelta(days=2))
        later = messages_repo.current_message(session, now + timedelta(days=3))
        assert later is None  # it ended
    with database.session(write=True) as session:
        assert messages_repo.clear_message(session) == 1
        assert messages_repo.clear_message(session) == 0
    with database.session() as session:
        assert messages_repo.current_message(session) is None
