"""Read processes: the API's database reads served by child processes of the master.

A master app with one real read process (``python -m pedl.master._read_main``) on each
backend must answer every read exactly as the master alone does (same status, same JSON),
see every write it acknowledged before, and keep answering while its read process crashes
and is started again; the read process must exit with the master, even a SIGKILLed one.
"""

from __future__ import annotations

import json
import os
import signal
import threading
import uuid
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import httpx
import pytest
from fastapi import FastAPI

from pedl.db import Database
from pedl.master import MasterSettings, create_app
from pedl.master._reads import ReadProcesses
from pedl.master.api._forward import Forwarding
from pedl.master.api._report_check import CHECK_PATH, REMOTE_CHECK_BYTES
from tests.waits import scaled, until

from .e2e import MasterProcess
from .helpers import LiveServer, bearer, child_pids, create_experiment, create_trial

pytestmark = pytest.mark.slow


@dataclass
class ReadsMaster:
    http: httpx.Client
    app: FastAPI
    reads: ReadProcesses

    @property
    def stats(self) -> Forwarding:
        stats = self.app.state.read_forwarding
        assert isinstance(stats, Forwarding)
        return stats


@pytest.fixture
def reads_master(
    backend_url: str, database: Database, admin_headers: dict[str, str], tmp_path: Path
) -> Iterator[ReadsMaster]:
    """A master app (no orchestrator) with one read process, over HTTP, on an empty database,
    once its read process answers; signed in as ``admin``."""
    settings = MasterSettings(home=tmp_path / "home", db_url=backend_url)
    reads = ReadProcesses(settings, 1, check_interval_s=0.1, restart_delay_s=0.2)
    app = create_app(settings, reads=reads)
    server = LiveServer(app)
    server.start()
    try:
        with httpx.Client(
            base_url=server.url + "/api/v1", timeout=scaled(60), headers=admin_headers
        ) as http:
            master = ReadsMaster(http, app, reads)

            def answered() -> bool:
                assert http.get("/experiments").status_code == 200
                return master.stats.forwarded > 0

            until(answered, "the read process")
            yield master
    finally:
        server.stop()


def test_every_read_route_answers_as_the_master_alone(
    reads_master: ReadsMaster, client: httpx.Client, database: Database
) -> None:
    """``client`` is a master without read processes on the same database."""
    experiment_id = create_experiment(reads_master.http)["id"]
    trial_id, token = create_trial(database, experiment_id)
    create_trial(database, experiment_id, seed=8)
    rows = [
        {"kind": "training", "total_batches": 10, "metrics": {"loss": 0.5}},
        {"kind": "validation", "total_batches": 10, "metrics": {"val_loss": 0.25}},
    ]
    report = reads_master.http.post(
        f"/trials/{trial_id}/metrics", json={"rows": rows}, headers=bearer(token)
    )
    assert report.status_code == 200, report.text
    lines = {"lines": [{"seq": i, "message": f"line {i}"} for i in range(3)]}
    reads_master.http.post(f"/trials/{trial_id}/logs", json=lines, headers=bearer(token))
    ckpt = str(uuid.uuid4())
    body = {"uuid": ckpt, "total_batches": 10, "state": "COMPLETED", "resources": {"w": 1}}
    registered = reads_master.http.post(
        f"/trials/{trial_id}/checkpoints", json=body, headers=bearer(token)
    )
    assert registered.status_code == 201, registered.text
    reads = [
        "/experiments",
        "/experiments?state=PAUSED&limit=1",
        f"/experiments/{experiment_id}",
        f"/experiments/{experiment_id}/trials",
        f"/experiments/{experiment_id}/trials?state=ACTIVE&limit=1&offset=1",
        f"/experiments/{experiment_id}/checkpoints",
        f"/trials/{trial_id}",
        f"/trials/{trial_id}/metrics",
        f"/trials/{trial_id}/metrics?kind=validation",
        f"/trials/{trial_id}/metrics?after_batches=10",
        f"/trials/{trial_id}/logs?after_seq=0&limit=1",
        f"/trials/{trial_id}/checkpoints",
        f"/checkpoints/{ckpt}",
        "/experiments/4242",  # 404
        "/trials/4242/metrics",
        f"/checkpoints/{uuid.uuid4()}",
        "/experiments/0/trials",  # 422
        f"/trials/{trial_id}/metrics?kind=nonsense",
        f"/trials/{trial_id}/logs?limit=0",
    ]
    before, served_here = reads_master.stats.forwarded, reads_master.stats.served_here
    for path in reads:
        got = reads_master.http.get(path)
        alone = client.get(path)
        assert (got.status_code, got.json()) == (alone.status_code, alone.json()), path
        assert got.headers["content-type"] == alone.headers["content-type"], path
    assert reads_master.stats.forwarded == before + len(reads)
    assert reads_master.stats.served_here == served_here
    # Everything else stays in the master.
    for path in ["/health", f"/experiments/{experiment_id}/model_definition", "/trials/1/start"]:
        reads_master.http.get(path)
    assert reads_master.stats.forwarded == before + len(reads)


def test_a_read_sees_every_write_acknowledged_before(
    reads_master: ReadsMaster, database: Database
) -> None:
    experiment_id = create_experiment(reads_master.http)["id"]
    trial_id, token = create_trial(database, experiment_id)
    served_here = reads_master.stats.served_here
    for batches in range(1, 41):
        row = {"kind": "training", "total_batches": batches, "metrics": {"loss": 1 / batches}}
        answer = reads_master.http.post(
            f"/trials/{trial_id}/metrics", json={"rows": [row]}, headers=bearer(token)
        )
        assert answer.status_code == 200
        seen = reads_master.http.get(f"/trials/{trial_id}/metrics")
        assert [r["total_batches"] for r in seen.json()] == list(range(1, batches + 1))
        trial = reads_master.http.get(f"/experiments/{experiment_id}/trials").json()["items"][0]
        assert trial["total_batches"] == batches
    paused = reads_master.http.post(f"/experiments/{experiment_id}/pause").json()
    assert paused["state"] == "PAUSED"
    assert reads_master.http.get(f"/experiments/{experiment_id}").json()["state"] == "PAUSED"
    assert reads_master.stats.served_here == served_here  # all of them forwarded


def test_reads_are_answered_while_the_read_process_restarts(reads_master: ReadsMaster) -> None:
    (pid,) = reads_master.reads.pids()
    os.kill(pid, signal.SIGKILL)
    served_here = reads_master.stats.served_here
    for _ in range(20):  # the master answers them itself until a read process is back
        assert reads_master.http.get("/experiments").status_code == 200
    until(lambda: reads_master.reads.restarts == 1, "the read process to be restarted")
    forwarded = reads_master.stats.forwarded

    def forwarded_again() -> bool:
        assert reads_master.http.get("/experiments").status_code == 200
        return reads_master.stats.forwarded > forwarded

    until(forwarded_again, "the new read process")
    assert reads_master.reads.pids() != [pid]
    assert reads_master.stats.served_here > served_here


def _big_report(first: int, count: int) -> dict[str, Any]:
    """A report of ``count`` training rows from batch ``first`` on, a validation row every 50
    (doubles to the last bit), whose body is long enough to be checked by a read process."""
    rows: list[dict[str, Any]] = []
    for batches in range(first, first + count):
        loss = 1 / batches + batches * 1e-17
        rows.append({"kind": "training", "total_batches": batches, "metrics": {"loss": loss}})
        if batches % 50 == 0:
            val = {"val_loss": (batches % 7) / 3 + 0.1, "val_accuracy": 1 / (batches % 11 + 3)}
            rows.append({"kind": "validation", "total_batches": batches, "metrics": val})
    report = {"rows": rows}
    assert len(json.dumps(report, separators=(",", ":"))) >= REMOTE_CHECK_BYTES  # as httpx sends it
    return report


_OWN = {"id", "seed", "created_at"}
"""What of a trial's JSON is its own, not its reports'."""


def test_a_big_report_checked_by_the_read_process_is_stored_as_by_the_master_alone(
    reads_master: ReadsMaster, client: httpx.Client, database: Database
) -> None:
    """``client`` is a master without read processes on the same database: the same reports
    to one trial each leave the same rows and the same trial (best validation included)."""
    experiment_id = create_experiment(reads_master.http)["id"]
    checked, checked_token = create_trial(database, experiment_id)
    alone, alone_token = create_trial(database, experiment_id, seed=8)
    before = reads_master.stats.reports_checked
    for first in (1, 501, 251):  # the last one rewrites rows (a resume from batch 250)
        report = _big_report(first, 500)
        answers = [
            http.post(f"/trials/{trial}/metrics", json=report, headers=bearer(token))
            for http, trial, token in [
                (reads_master.http, checked, checked_token),
                (client, alone, alone_token),
            ]
        ]
        assert [a.status_code for a in answers] == [200, 200], answers[0].text
        assert answers[0].json()["rows"] == answers[1].json()["rows"] == len(report["rows"])
    assert reads_master.stats.reports_checked == before + 3
    rows = [
        [{k: v for k, v in row.items() if k not in ("trial_id", "reported_at")} for row in answers]
        for answers in (
            client.get(f"/trials/{trial}/metrics?limit=100000").json() for trial in (checked, alone)
        )
    ]
    assert rows[0] == rows[1]
    assert len(rows[0]) == 1000 + 20
    trials = [client.get(f"/trials/{trial}").json() for trial in (checked, alone)]
    assert [{k: v for k, v in t.items() if k not in _OWN} for t in trials[1:]] == [
        {k: v for k, v in trials[0].items() if k not in _OWN}
    ]
    assert trials[0]["total_batches"] == 1000


def test_a_big_report_the_read_process_refuses_gets_the_routes_own_error(
    reads_master: ReadsMaster, client: httpx.Client, database: Database
) -> None:
    experiment_id = create_experiment(reads_master.http)["id"]
    trial_id, token = create_trial(database, experiment_id)
    before = reads_master.stats.reports_checked
    too_big = _big_report(1, 500)
    too_big["rows"][7]["metrics"]["loss"] = 1e301
    no_kind = _big_report(1, 500)
    no_kind["rows"][3]["kind"] = "testing"
    for report, field in [(too_big, "rows[7].metrics.loss"), (no_kind, "body.rows[3].kind")]:
        answers = [
            http.post(f"/trials/{trial_id}/metrics", json=report, headers=bearer(token))
            for http in (reads_master.http, client)
        ]
        assert [a.status_code for a in answers] == [422, 422]
        assert answers[0].json() == answers[1].json()
        assert answers[0].json()["error"]["field"] == field
    assert reads_master.stats.reports_checked == before
    # Checked there, refused by the writer: the row it names is read from the body here.
    reads_master.app.state.metric_ingestor.limit_batches(trial_id, 300)
    past = reads_master.http.post(
        f"/trials/{trial_id}/metrics", json=_big_report(1, 500), headers=bearer(token)
    )
    assert past.status_code == 409, past.text
    assert past.json()["error"]["field"] == "rows[306].total_batches"  # 6 validation rows before it
    assert reads_master.stats.reports_checked == before + 1
    assert client.get(f"/trials/{trial_id}/metrics").json() == []


def test_a_big_report_is_checked_by_the_master_while_the_read_process_does_not_answer(
    reads_master: ReadsMaster, database: Database
) -> None:
    experiment_id = create_experiment(reads_master.http)["id"]
    trial_id, token = create_trial(database, experiment_id)
    (pid,) = reads_master.reads.pids()
    before = reads_master.stats.reports_checked
    os.kill(pid, signal.SIGSTOP)  # it accepts connections, and answers none
    try:
        report = _big_report(1, 500)
        answer = reads_master.http.post(
            f"/trials/{trial_id}/metrics", json=report, headers=bearer(token)
        )
    finally:
        os.kill(pid, signal.SIGCONT)
    assert answer.status_code == 200, answer.text
    assert answer.json()["rows"] == len(report["rows"])
    assert reads_master.stats.reports_checked == before
    stored = reads_master.http.get(f"/trials/{trial_id}/metrics?limit=100000").json()
    assert [(r["kind"], r["total_batches"], r["metrics"]) for r in stored] == sorted(
        ((r["kind"], r["total_batches"], r["metrics"]) for r in report["rows"]),
        key=lambda r: (r[0] != "training", r[1]),
    )


def test_a_read_process_app_serves_only_the_reads(
    backend_url: str, admin_headers: dict[str, str], tmp_path: Path
) -> None:
    settings = MasterSettings(home=tmp_path / "home", db_url=backend_url)
    server = LiveServer(create_app(settings, reads_only=True))
    server.start()
    try:
        with httpx.Client(
            base_url=server.url + "/api/v1", timeout=scaled(30), headers=admin_headers
        ) as http:
            assert http.get("/experiments").status_code == 200
            assert http.get("/health").status_code == 200
            assert http.post("/experiments", json={}).status_code == 404
            assert http.get("/trials/1/start").status_code == 404
            assert http.post("/trials/1/metrics", json={"rows": []}).status_code == 404
            assert http.get("/openapi.json").status_code == 404
            # ... and checks reports for the master (pedl.master.api._report_check).
            rows = [
                {"kind": "training", "total_batches": 5, "metrics": {"loss": 0.5}},
                {"kind": "validation", "total_batches": 5, "metrics": {"val_loss": 0.25}},
                {"kind": "training", "total_batches": 9, "metrics": {"loss": 0.125}},
            ]
            check = server.url + CHECK_PATH
            answer = http.post(check, json={"rows": rows})
            assert answer.status_code == 200
            summary = {"rows": 3, "keys": 3, "most": 9, "top": 9, "validated": [5]}
            # PostgreSQL reads only reports of 100 rows or more from their text.
            assert answer.json() == (summary if backend_url.startswith("sqlite") else None)
            rows[1]["metrics"]["val_loss"] = float("nan")  # the writer stores it as rows
            refused = http.post(check, content=json.dumps({"rows": rows}))
            assert (refused.status_code, refused.json()) == (200, None)
            assert http.post(check, content=b"[not json").json() is None
    finally:
        server.stop()
    assert not (tmp_path / "home").exists()  # no migrations, no metric writer: it made nothing


def _gone(pid: int) -> bool:
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return True
    # A zombie until its parent (init, once the master is dead) reaps it.
    return Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()[0] == "Z"


def _reader(master: MasterProcess) -> int:
    """The master's one child, its read process, once it has started it."""
    assert master.proc is not None
    pid = master.proc.pid
    until(lambda: len(child_pids(pid)) == 1, "the read process")
    (reader,) = child_pids(pid)
    return reader


@pytest.mark.parametrize("how", ["SIGTERM", "SIGKILL"])
def test_the_read_process_exits_with_the_master(tmp_path: Path, how: str) -> None:
    master = MasterProcess(tmp_path).start()
    try:
        reader = _reader(master)
        assert master.http.get("/experiments").status_code == 200
        if how == "SIGKILL":
            master.sigkill()
        else:
            master.stop()
        until(lambda: _gone(reader), "the read process to exit", timeout=30)
    finally:
        master.stop()
    if how == "SIGTERM":
        assert "read process" in master.log() and "Traceback" not in master.log()


def test_a_masters_read_process_is_forked_and_started_again_when_it_dies(tmp_path: Path) -> None:
    """A master forks its read process as it starts (no second start of Python: it is named
    ``pedl-reads``); SIGKILLed, it is replaced by a new ``python -m pedl.master._read_main``
    that serves (the master's log says both)."""
    master = MasterProcess(tmp_path).start()
    try:
        forked = _reader(master)
        assert master.proc is not None
        pid = master.proc.pid
        assert Path(f"/proc/{forked}/comm").read_text().strip() == "pedl-reads"
        os.kill(forked, signal.SIGKILL)

        def replaced() -> list[int]:
            return [c for c in child_pids(pid) if c != forked and not _gone(c)]

        (started,) = until(replaced, "another read process", timeout=60)
        assert b"pedl.master._read_main" in Path(f"/proc/{started}/cmdline").read_bytes()
        until(
            lambda: f"read process {started} serving on" in master.log(),
            "the new read process's start in the log",
        )
        assert f"read process {forked} exited with status -9" in master.log()
        assert master.http.get("/experiments").status_code == 200
    finally:
        master.stop()
    assert "Traceback" not in master.log()


def test_a_process_running_another_thread_forks_no_read_process(tmp_path: Path) -> None:
    """Forking copies only the calling thread: beside another one (which may hold a lock the
    child would need), :meth:`ReadProcesses.prefork` forks nothing and :meth:`start` starts
    new Python processes."""
    reads = ReadProcesses(MasterSettings(home=tmp_path / "home"), 1)
    stop = threading.Event()
    other = threading.Thread(target=stop.wait)
    other.start()
    try:
        before = child_pids(os.getpid())
        reads.prefork()
        assert child_pids(os.getpid()) == before
    finally:
        stop.set()
        other.join()
