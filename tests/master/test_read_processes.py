"""Read processes: the API's database reads served by child processes of the master.

A master app with one real read process (``python -m pedl.master._read_main``) on each
backend must answer every read exactly as the master alone does (same status, same JSON),
see every write it acknowledged before, and keep answering while its read process crashes
and is started again; the read process must exit with the master, even a SIGKILLed one.
"""

from __future__ import annotations

import os
import signal
import uuid
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path

import httpx
import pytest
from fastapi import FastAPI

from pedl.db import Database
from pedl.master import MasterSettings, create_app
from pedl.master._reads import ReadProcesses
from pedl.master.api._forward import Forwarding
from tests.waits import scaled, until

from .e2e import MasterProcess
from .helpers import LiveServer, bearer, create_experiment, create_trial

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
    finally:
        server.stop()
    assert not (tmp_path / "home").exists()  # no migrations, no metric writer: it made nothing


def _children(pid: int) -> list[int]:
    out = []
    for task in Path(f"/proc/{pid}/task").iterdir():
        out += [int(child) for child in (task / "children").read_text().split()]
    return out


def _gone(pid: int) -> bool:
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return True
    # A zombie until its parent (init, once the master is dead) reaps it.
    return Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()[0] == "Z"


@pytest.mark.parametrize("how", ["SIGTERM", "SIGKILL"])
def test_the_read_process_exits_with_the_master(tmp_path: Path, how: str) -> None:
    master = MasterProcess(tmp_path).start()
    try:
        assert master.proc is not None
        pid = master.proc.pid
        until(lambda: len(_children(pid)) == 1, "the read process")
        (reader,) = _children(pid)
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
