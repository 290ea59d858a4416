"""A spare worker (started before any trial needs it) that exits by itself shows on
``GET /cluster``, not only in the master's log. A real master app (its orchestrator and local
resource manager, a real spare worker process) over HTTP, on SQLite and PostgreSQL.
"""

from __future__ import annotations

import os
import signal
import time
from collections.abc import Callable
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import Any

import httpx

from pedl.master import MasterSettings, create_app
from pedl.master.api._app import make_database
from pedl.master.orchestrator import Orchestrator

from .e2e import free_port
from .helpers import LiveServer, sign_in


def _wait(condition: Callable[[], Any], what: str, timeout: float = 60) -> Any:
    deadline = time.monotonic() + timeout
    while not (value := condition()):
        assert time.monotonic() < deadline, f"timed out waiting for {what}"
        time.sleep(0.1)
    return value


def _workers() -> list[int]:
    """This process's children that are warm workers (``python -m pedl.exec.worker``)."""
    found = []
    for task in Path(f"/proc/{os.getpid()}/task").iterdir():
        for child in (task / "children").read_text().split():
            try:
                cmdline = Path(f"/proc/{child}/cmdline").read_bytes().split(b"\0")
            except OSError:
                continue
            if b"pedl.exec.worker" in cmdline:
                found.append(int(child))
    return found


def test_a_spare_worker_that_dies_shows_on_the_cluster(fresh_db_url: str, tmp_path: Path) -> None:
    port = free_port()
    settings = MasterSettings(
        home=tmp_path / "home",
        db_url=fresh_db_url,
        cpu_slots=1,
        worker_reuse=True,
        spare_workers=1,
    )
    database = make_database(settings)
    orchestrator = Orchestrator(database, settings, master_url=f"http://127.0.0.1:{port}")
    app = create_app(settings, database=database, orchestrator=orchestrator)
    try:
        with (
            LiveServer(app, port=port) as server,
            httpx.Client(
                base_url=server.url + "/api/v1", timeout=30, headers=sign_in(database)
            ) as http,
        ):
            (pid,) = _wait(_workers, "the spare worker")
            assert http.get("/cluster").json()["worker_exits"] == []
            os.kill(pid, signal.SIGKILL)

            def exits() -> list[dict[str, Any]]:
                return list(http.get("/cluster").json()["worker_exits"])

            (gone,) = _wait(exits, "the spare worker's exit on the cluster", timeout=30)
            assert gone["pid"] == pid and gone["spare"] is True
            assert gone["exit"] == "signal SIGKILL"
            assert gone["experiment_id"] is None and gone["trial_id"] is None
            noticed = datetime.fromisoformat(gone["at"].replace("Z", "+00:00"))
            assert abs(datetime.now(UTC) - noticed) < timedelta(minutes=1)
    finally:
        database.dispose()
