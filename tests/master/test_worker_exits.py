"""A spare worker (started before any trial needs it) that exits by itself shows on
``GET /cluster``, not only in the master's log; a warm worker that ran an experiment's trial
shows there too, with that experiment and trial, in the trial's log and in
``pedl experiment describe``. A real master app (its orchestrator and local resource manager,
real worker processes) over HTTP, on SQLite and PostgreSQL (the spare), on SQLite (the warm
worker: no more of the database is involved)."""

from __future__ import annotations

import base64
import os
import signal
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import Any

import httpx
from click.testing import CliRunner

from pedl.cli import cli
from pedl.master import MasterSettings, create_app
from pedl.master.api._app import make_database
from pedl.master.orchestrator import Orchestrator
from tests.waits import scaled, until

from .e2e import free_port
from .helpers import LiveServer, child_pids, make_archive, sign_in

# A trial that rejects its hyperparameters at once: it ends normally (INVALID_HP), so its
# worker stays, idle, for the experiment's next trial.
REJECTING_MODEL = {
    "model_def.py": b"import pedl\nfrom pedl.keras import TFKerasTrial\n\n\n"
    b"class MyTrial(TFKerasTrial):\n"
    b"    def __init__(self, context):\n"
    b"        raise pedl.InvalidHP('not these')\n"
}
CONFIG = """
name: warm
entrypoint: model_def:MyTrial
hyperparameters: {global_batch_size: 4}
searcher: {name: single, metric: val_loss, max_length: {batches: 10}}
"""


def _workers() -> list[int]:
    """The warm workers of this process's resource manager: its children that are
    ``python -m pedl.exec.worker``, and those its worker template forked."""
    found = []
    for child in child_pids(os.getpid()):
        try:
            cmdline = Path(f"/proc/{child}/cmdline").read_bytes().split(b"\0")
        except OSError:
            continue
        if b"pedl.exec.worker" in cmdline:
            found.append(child)
        elif b"pedl.exec.template" in cmdline:
            found += child_pids(child)
    return found


def test_a_spare_worker_that_dies_shows_on_the_cluster(fresh_db_url: str, tmp_path: Path) -> None:
    port = free_port()
    settings = MasterSettings(
        home=tmp_path / "home",
        db_url=fresh_db_url,
        cpu_slots=1,
        worker_reuse=True,
        spare_workers=1,
        worker_template=False,  # a spare of its own process; the warm worker below is forked
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
            (pid,) = until(_workers, "the spare worker")
            assert http.get("/cluster").json()["worker_exits"] == []
            os.kill(pid, signal.SIGKILL)

            def exits() -> list[dict[str, Any]]:
                return list(http.get("/cluster").json()["worker_exits"])

            (gone,) = until(exits, "the spare worker's exit on the cluster", timeout=30)
            assert gone["pid"] == pid and gone["spare"] is True
            assert gone["exit"] == "signal SIGKILL"
            assert gone["experiment_id"] is None and gone["trial_id"] is None
            noticed = datetime.fromisoformat(gone["at"].replace("Z", "+00:00"))
            assert abs(datetime.now(UTC) - noticed) < timedelta(minutes=1)
    finally:
        database.dispose()


def test_a_warm_worker_that_dies_shows_in_describe(tmp_path: Path) -> None:
    port = free_port()
    settings = MasterSettings(
        home=tmp_path / "home", cpu_slots=1, worker_reuse=True, spare_workers=0
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
            archive = base64.b64encode(make_archive(REJECTING_MODEL)).decode()
            response = http.post(
                "/experiments", json={"config": CONFIG, "model_definition": archive}
            )
            assert response.status_code == 201, response.text
            experiment_id = response.json()["id"]

            def ended() -> dict[str, Any] | None:
                items = http.get(f"/experiments/{experiment_id}/trials").json()["items"]
                return items[0] if items and items[0]["outcome"] == "INVALID_HP" else None

            trial = until(ended, "the trial to reject its hyperparameters", timeout=120)
            (pid,) = until(_workers, "the idle warm worker")
            os.kill(pid, signal.SIGKILL)

            def exits() -> list[dict[str, Any]]:
                return list(http.get("/cluster").json()["worker_exits"])

            (gone,) = until(exits, "the worker's exit on the cluster", timeout=30)
            assert gone["pid"] == pid and gone["spare"] is False
            assert gone["experiment_id"] == experiment_id and gone["trial_id"] == trial["id"]

            def logged() -> bool:
                lines = http.get(f"/trials/{trial['id']}/logs").json()
                return any(f"warm worker process {pid}" in line["message"] for line in lines)

            until(logged, "the line in the trial's log")
            described = CliRunner().invoke(
                cli,
                ["--master", server.url, "experiment", "describe", str(experiment_id)],
                terminal_width=200,
                env={"COLUMNS": "200"},
            )
            assert described.exit_code == 0, described.output
            assert f"The warm worker process {pid}, which ran trial {trial['id']}" in (
                described.output
            )
            assert "signal SIGKILL" in described.output
    finally:
        database.dispose()
