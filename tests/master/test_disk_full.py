"""A master whose own disk is full starts no trial process and says why, and a trial that
fails meanwhile spends none of its restarts.

The disk is "full" by the master's ``min_free_disk_bytes`` set above any free space (the disk
itself is not filled), then lowered to let trials start. A real master app (its orchestrator,
real trial processes whose model definition sleeps on import) over HTTP, on SQLite and
PostgreSQL.
"""

from __future__ import annotations

import base64
import os
import signal
import time
from pathlib import Path
from typing import Any

import httpx

from pedl.master import MasterSettings, create_app
from pedl.master.api._app import make_database
from pedl.master.orchestrator import Orchestrator
from tests.waits import scaled, until

from .e2e import free_port
from .helpers import LiveServer, make_archive, sign_in

SLEEPING_MODEL = {"model_def.py": b"import time\ntime.sleep(120)\n\nclass MyTrial:\n    pass\n"}
CONFIG = """
name: disk
entrypoint: model_def:MyTrial
hyperparameters: {lr: 0.1}
searcher: {name: single, metric: val_loss, max_length: {batches: 10}}
max_restarts: 0
"""
FULL = 1 << 62
"""A min_free_disk_bytes no disk has free."""


def _trial_processes() -> list[int]:
    """This process's children that run a trial (``python -m pedl.exec.trial``)."""
    found = []
    for task in Path(f"/proc/{os.getpid()}/task").iterdir():
        for child in (task / "children").read_text().split():
            cmdline = Path(f"/proc/{child}/cmdline").read_bytes().split(b"\0")
            if b"pedl.exec.trial" in cmdline:
                found.append(int(child))
    return found


def test_a_full_disk_queues_trials_with_a_reason_and_spends_no_restart(
    fresh_db_url: str, tmp_path: Path
) -> None:
    port = free_port()
    settings = MasterSettings(
        home=tmp_path / "home",
        db_url=fresh_db_url,
        cpu_slots=1,
        worker_reuse=False,
        spare_workers=0,
        min_free_disk_bytes=FULL,
    )
    database = make_database(settings)
    orchestrator = Orchestrator(database, settings, master_url=f"http://127.0.0.1:{port}")
    app = create_app(settings, database=database, orchestrator=orchestrator)
    try:
        with (
            LiveServer(app, port=port) as server,
            httpx.Client(
                base_url=server.url + "/api/v1", timeout=scaled(30), headers=sign_in(database)
            ) as http,
        ):
            archive = base64.b64encode(make_archive(SLEEPING_MODEL)).decode()
            response = http.post(
                "/experiments", json={"config": CONFIG, "model_definition": archive}
            )
            assert response.status_code == 201, response.text
            experiment_id = response.json()["id"]

            def trial() -> dict[str, Any]:
                (item,) = http.get(f"/experiments/{experiment_id}/trials").json()["items"]
                return dict(item)

            def queued_for_the_disk() -> dict[str, Any] | None:
                cluster = http.get("/cluster").json()
                reasons = [q["reason"] or "" for q in cluster["queued"]]
                return cluster if reasons and "disk is full" in reasons[0] else None

            # Nothing starts; the queued trial, the cluster and the trial's log say why.
            cluster = until(queued_for_the_disk, "the trial queued for the full disk")
            assert "min_free_disk_bytes" in cluster["halted"]
            assert cluster["running"] == [] and _trial_processes() == []
            trial_id = trial()["id"]
            scheduling = http.get(f"/trials/{trial_id}/scheduling").json()
            assert "disk is full" in scheduling["queue_reason"]

            def logged() -> bool:  # the master logs why after it has queued the trial
                logs = http.get(f"/trials/{trial_id}/logs").json()
                return any("queued: the master's disk is full" in line["message"] for line in logs)

            until(logged, "the trial's log to say why it waits")

            # Room again: the trial starts.
            settings.min_free_disk_bytes = 0
            (pid,) = until(_trial_processes, "the trial's process")
            until(lambda: trial()["state"] == "RUNNING", "the trial to run")
            assert http.get("/cluster").json()["halted"] is None

            # Full again, and the trial's process dies: the master's failure, not the trial's
            # (max_restarts is 0: counted, it would have ended the trial in ERROR).
            settings.min_free_disk_bytes = FULL
            until(lambda: http.get("/cluster").json()["halted"], "the master to see the disk")
            os.kill(pid, signal.SIGKILL)
            failed = until(
                lambda: (t := trial())["outcome"] == "ERRORED" and t["state"] == "QUEUED" and t,
                "the trial to wait again",
            )
            assert failed["restarts"] == 0
            assert failed["error"]["type"] == "MasterDiskFull"
            assert "signal SIGKILL" in failed["error"]["message"]
            time.sleep(1)  # a few ticks: it stays queued, not restarted
            assert trial()["state"] == "QUEUED" and _trial_processes() == []

            settings.min_free_disk_bytes = 0
            until(_trial_processes, "the trial's process again")
            until(lambda: trial()["state"] == "RUNNING", "the trial to run again")
            assert trial()["restarts"] == 0
    finally:
        database.dispose()
