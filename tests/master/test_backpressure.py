"""Load shedding for real: each overload path answers 503 with Retry-After, never 500, and the
master keeps serving once the load is gone; a trial's client rides out a master restart."""

from __future__ import annotations

import sqlite3
import threading
import time
import uuid
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import httpx
import pytest
from pydantic import TypeAdapter
from sqlalchemy import Connection, func, select, text

from pedl.db import Checkpoint, Database, Metric
from pedl.db import metrics as metrics_repo
from pedl.exec import MasterClient
from pedl.master import MasterSettings, create_app
from pedl.master.api._app import make_database
from pedl.master.api._schemas import MetricPublic
from tests.diagnostics import event_loop_tasks, thread_stacks

from .e2e import free_port
from .helpers import LiveServer, bearer, create_experiment, create_trial, sign_in


def assert_shed(response: httpx.Response) -> None:
    """A 503 with Retry-After and the standard error body."""
    assert response.status_code == 503, response.text
    assert int(response.headers["Retry-After"]) >= 1
    assert response.json()["error"]["message"]


def test_settings_size_the_pool_and_the_threads(tmp_path: Path) -> None:
    sqlite = MasterSettings(home=tmp_path)
    assert (sqlite.db_connections, sqlite.worker_threads, sqlite.metric_writers) == (16, 12, 1)
    postgres = MasterSettings(home=tmp_path, db_url="postgresql://u@h/db")
    # 3 bulk metric writers beside the first: 3 more connections out of the threads' reach
    assert (postgres.db_connections, postgres.worker_threads, postgres.metric_writers) == (
        20,
        13,
        4,
    )
    for connections, writers, threads in [(9, 2, 4), (7, 1, 3)]:
        small = MasterSettings(
            home=tmp_path, db_url="postgresql://u@h/db", max_db_connections=connections
        )
        assert (small.metric_writers, small.worker_threads) == (writers, threads)
    custom = MasterSettings(home=tmp_path, max_db_connections=40, db_pool_timeout=0.5)
    assert (custom.db_connections, custom.worker_threads) == (40, 36)
    assert MasterSettings(home=tmp_path, api_threads=3).worker_threads == 3
    database = make_database(custom)
    try:
        pool: Any = database.engine.pool
        assert (pool.size(), pool._max_overflow, pool._timeout) == (40, 0, 0.5)
    finally:
        database.dispose()


class Master:
    """An API-only master on its own small-pooled :class:`Database`, served over HTTP."""

    def __init__(self, url: str, home: Path, database: Database, **settings: Any) -> None:
        self.database = database
        self.settings = MasterSettings(home=home, db_url=url, **settings)
        self.server = LiveServer(create_app(self.settings, database=database))
        self.server.start()
        self.http = httpx.Client(
            base_url=self.server.url + "/api/v1", timeout=30, headers=sign_in(database)
        )
        experiment = create_experiment(self.http)
        self.trial_id, self.token = create_trial(database, experiment["id"])

    def close(self) -> None:
        self.http.close()
        self.server.stop()
        self.database.dispose()


@pytest.fixture
def small_master(fresh_db_url: str, tmp_path: Path) -> Iterator[Master]:
    """Five pooled connections, 0.3 s to get one; SQLite waits 0.3 s for its lock."""
    database = Database(fresh_db_url, pool_size=5, pool_timeout=0.3, busy_timeout=0.3)
    database.upgrade()
    master = Master(fresh_db_url, tmp_path, database, max_db_connections=5, db_pool_timeout=0.3)
    try:
        yield master
    finally:
        master.close()


def hold_connections(database: Database, count: int) -> list[Connection]:
    held = [database.engine.connect() for _ in range(count)]
    for conn in held:
        conn.exec_driver_sql("SELECT 1")
    return held


def test_an_exhausted_pool_is_a_503_then_serving_resumes(small_master: Master) -> None:
    path = f"/trials/{small_master.trial_id}"
    held = hold_connections(small_master.database, 5)
    try:
        assert_shed(small_master.http.get(path))
        assert_shed(small_master.http.get(f"{path}/metrics"))
        assert small_master.http.get("/health").status_code == 200
    finally:
        for conn in held:
            conn.close()
    assert small_master.http.get(path).status_code == 200
    assert small_master.http.get(f"{path}/metrics").status_code == 200


def test_too_many_requests_in_flight_are_shed_at_once(fresh_db_url: str, tmp_path: Path) -> None:
    database = Database(fresh_db_url, pool_size=5, pool_timeout=2.0)
    database.upgrade()
    master = Master(
        fresh_db_url, tmp_path, database, max_db_connections=5, max_requests_in_flight=1
    )
    try:
        path = f"/trials/{master.trial_id}"
        held = hold_connections(database, 5)
        slow: list[httpx.Response] = []
        # This one waits for a connection (up to 2 s), occupying the only request slot.
        waiter = threading.Thread(target=lambda: slow.append(master.http.get(path)))
        waiter.start()
        time.sleep(0.5)
        started = time.monotonic()
        shed = master.http.get(path)
        assert time.monotonic() - started < 1.0  # answered at once, not queued
        assert_shed(shed)
        assert "serving 1 requests" in shed.json()["error"]["message"]
        assert master.http.get("/health").status_code == 200
        for conn in held[:1]:
            conn.close()
        waiter.join(10)
        assert [r.status_code for r in slow] == [200]
        for conn in held[1:]:
            conn.close()
        assert master.http.get(path).status_code == 200
    finally:
        master.close()


def sqlite_file(url: str) -> str:
    return url.removeprefix("sqlite:///")


@pytest.fixture
def sqlite_master(tmp_path: Path) -> Iterator[Master]:
    url = f"sqlite:///{tmp_path / 'locked.db'}"
    database = Database(url, pool_size=8, pool_timeout=1.0, busy_timeout=0.3)
    database.upgrade()
    master = Master(url, tmp_path, database, max_db_connections=8, max_queued_reports=1)
    try:
        yield master
    finally:
        master.close()


def lock_sqlite(url: str) -> sqlite3.Connection:
    """Another process's writer, as far as the master can tell: holds SQLite's write lock."""
    conn = sqlite3.connect(sqlite_file(url), isolation_level=None)
    conn.execute("BEGIN IMMEDIATE")
    return conn


def log_body(seq: int) -> dict[str, Any]:
    return {"lines": [{"seq": seq, "message": f"line {seq}", "level": "INFO"}]}


def test_a_locked_sqlite_database_is_a_503(sqlite_master: Master) -> None:
    trial, headers = sqlite_master.trial_id, bearer(sqlite_master.token)
    lock = lock_sqlite(sqlite_master.settings.db_url)
    try:
        assert_shed(
            sqlite_master.http.post(f"/trials/{trial}/logs", json=log_body(1), headers=headers)
        )
        rows = {"rows": [{"kind": "training", "total_batches": 1, "metrics": {"loss": 1.0}}]}
        assert_shed(sqlite_master.http.post(f"/trials/{trial}/metrics", json=rows, headers=headers))
        assert sqlite_master.http.get(f"/trials/{trial}").status_code == 200  # WAL: reads go on
    finally:
        lock.rollback()
        lock.close()
    answer = sqlite_master.http.post(f"/trials/{trial}/logs", json=log_body(1), headers=headers)
    assert answer.status_code == 200, answer.text


def test_a_full_metric_queue_is_a_503(sqlite_master: Master) -> None:
    trial, headers = sqlite_master.trial_id, bearer(sqlite_master.token)
    url = sqlite_master.server.url + f"/api/v1/trials/{trial}/metrics"
    lock = lock_sqlite(sqlite_master.settings.db_url)
    answers: list[httpx.Response] = []

    def post(batch: int) -> None:
        body = {"rows": [{"kind": "training", "total_batches": batch, "metrics": {"x": 1.0}}]}
        answers.append(httpx.post(url, json=body, headers=headers, timeout=30))

    # The writer takes the first report and waits for the lock; the second is queued (the
    # queue's limit is 1); the third finds the queue full.
    threads = [threading.Thread(target=post, args=(batch,)) for batch in (1, 2, 3)]
    try:
        for thread in threads:
            thread.start()
            time.sleep(0.1)
        for thread in threads:
            thread.join(30)
    finally:
        lock.rollback()
        lock.close()
    assert len(answers) == 3
    for answer in answers:
        assert_shed(answer)
    assert any("queued" in a.json()["error"]["message"] for a in answers), [a.text for a in answers]
    # The lock is gone: reports are stored again.
    post(4)
    assert answers[-1].status_code == 200, answers[-1].text


def test_checkpoint_registration_is_idempotent(client: httpx.Client, database: Database) -> None:
    experiment = create_experiment(client)
    trial_id, token = create_trial(database, experiment["id"])
    body = {"uuid": str(uuid.uuid4()), "total_batches": 10, "metadata": {}, "resources": {}}
    for _ in range(2):
        answer = client.post(f"/trials/{trial_id}/checkpoints", json=body, headers=bearer(token))
        assert answer.status_code == 201, answer.text
    with database.session() as session:
        count = session.scalar(select(func.count()).select_from(Checkpoint))
    assert count == 1


class RestartableServer:
    """The master's app served on a fixed port, stopped and started again (same database):
    each start serves a new app, as a restarted master does."""

    def __init__(self, settings: MasterSettings, port: int) -> None:
        self.settings, self.port = settings, port
        self.live: LiveServer | None = None

    def start(self) -> None:
        self.live = LiveServer(create_app(self.settings), port=self.port)
        self.live.start()

    def stop(self) -> None:
        assert self.live is not None
        self.live.stop()


def test_a_reporting_trial_loses_nothing_across_a_master_restart(
    fresh_db_url: str, tmp_path: Path
) -> None:
    settings = MasterSettings(home=tmp_path, db_url=fresh_db_url)
    port = free_port()
    server = RestartableServer(settings, port)
    server.start()
    database = Database(fresh_db_url)
    try:
        with httpx.Client(
            base_url=f"http://127.0.0.1:{port}/api/v1", timeout=30, headers=sign_in(database)
        ) as http:
            experiment = create_experiment(http)
        trial_id, token = create_trial(database, experiment["id"])
        client = MasterClient(f"http://127.0.0.1:{port}", trial_id, token, give_up_after=60)
        reported: list[int] = []
        times: list[float] = []  # when each report was answered
        uuids: list[str] = []
        failures: list[BaseException] = []
        stop = threading.Event()

        def report() -> None:
            batch = 0
            try:
                while not stop.is_set():
                    batch += 1
                    row = {"kind": "validation", "total_batches": batch, "metrics": {"x": 1.0}}
                    client.post(client.trial_path + "/metrics", {"rows": [row]})
                    reported.append(batch)
                    times.append(time.monotonic())
                    if batch % 5 == 0:
                        ckpt = str(uuid.uuid4())
                        body = {"uuid": ckpt, "total_batches": batch, "metadata": {}}
                        client.post(client.trial_path + "/checkpoints", body)
                        uuids.append(ckpt)
                    time.sleep(0.01)
            except BaseException as err:  # surfaced by the assertion below
                failures.append(err)

        reporter = threading.Thread(target=report)
        reporter.start()
        time.sleep(1.0)
        server.stop()
        down_at = len(reported)
        time.sleep(2.0)  # the client keeps retrying against a closed port
        assert len(reported) <= down_at + 1
        server.start()
        started = time.monotonic()
        deadline = started + 60  # the client's backoff is up to 5 s by now; CI is slow
        while len(reported) < down_at + 10 and time.monotonic() < deadline and not failures:
            time.sleep(0.1)
        stuck = "" if len(reported) >= down_at + 10 else f"{thread_stacks()}\n{event_loop_tasks()}"
        stop.set()
        reporter.join(60)
        client.close()
        assert not failures, failures
        # It went on after the restart.
        after = [round(t - started, 2) for t in times[down_at:]]
        assert not stuck, f"answered at {after} s after the restart; threads, loops then:\n{stuck}"
        with database.session() as session:
            stored = session.scalars(
                select(Metric.total_batches).where(Metric.trial_id == trial_id)
            ).all()
            checkpoints = session.scalars(
                select(Checkpoint.uuid).where(Checkpoint.trial_id == trial_id)
            ).all()
        assert sorted(stored) == reported
        assert sorted(checkpoints) == sorted(uuids)
    finally:
        server.stop()
        database.dispose()


def test_the_lean_metrics_read_has_the_public_shape(
    client: httpx.Client, database: Database
) -> None:
    """GET /trials/{id}/metrics builds its JSON itself: the same document MetricPublic
    gives for the ORM rows (timestamps in the same text)."""
    experiment = create_experiment(client)
    trial_id, token = create_trial(database, experiment["id"])
    rows = [
        {"kind": "training", "total_batches": 5, "metrics": {"loss": 0.5, "odd": "NaN"}},
        {
            "kind": "validation",
            "total_batches": 5,
            "total_records": 80,
            "total_epochs": 1.5,
            "metrics": {"val_loss": 0.25, "none": None},
            "reported_at": "2026-01-02T03:04:05.678901+02:00",
        },
        {  # no fraction of a second: pydantic writes none either
            "kind": "validation",
            "total_batches": 7,
            "total_epochs": 0.30000000000000004,
            "metrics": {"val_loss": 1e-7},
            "reported_at": "2026-01-02T03:04:05Z",
        },
    ]
    answer = client.post(f"/trials/{trial_id}/metrics", json={"rows": rows}, headers=bearer(token))
    assert answer.status_code == 200, answer.text
    got = client.get(f"/trials/{trial_id}/metrics")
    assert got.status_code == 200 and got.headers["content-type"] == "application/json"
    with database.session() as session:
        orm_rows = metrics_repo.list_metrics(session, trial_id)
        expected = TypeAdapter(list[MetricPublic]).dump_python(
            [MetricPublic.model_validate(row) for row in orm_rows], mode="json"
        )
    assert got.json() == expected
    assert len(expected) == 3 and expected[0]["metrics"]["odd"] == "NaN"
    assert expected[2]["reported_at"] == "2026-01-02T03:04:05Z"
    filtered = client.get(f"/trials/{trial_id}/metrics", params={"kind": "validation"})
    assert filtered.json() == expected[1:]
    later = client.get(f"/trials/{trial_id}/metrics", params={"after_batches": 5})
    assert later.json() == expected[2:]
    if database.dialect == "sqlite":  # a timestamp stored in another text form reads the same
        with database.session(write=True) as session:
            stamp, where = "'2026-01-02T03:04:05+00:00'", "total_batches = 7"
            session.execute(text(f"UPDATE metrics SET reported_at = {stamp} WHERE {where}"))
        assert later.json() == client.get(f"/trials/{trial_id}/metrics?after_batches=5").json()
    assert client.get("/trials/999999/metrics").status_code == 404
