"""A trial that does not stop when its slots are disabled without drain (it never asks
whether to; here it sleeps) is killed once the grace runs out (shortened here) and runs again
from its latest checkpoint without spending a restart, after the agent is enabled."""

from __future__ import annotations

import base64
import time
from collections.abc import Callable
from pathlib import Path

import httpx
import pytest

from pedl.master import MasterSettings, create_app
from pedl.master.api._app import make_database
from pedl.master.orchestrator import Orchestrator
from pedl.master.orchestrator import _orchestrator as orchestrator_module
from tests.waits import scaled

from .e2e import free_port
from .helpers import LiveServer, make_archive, sign_in

SLEEPING_MODEL = {"model_def.py": b"import time\ntime.sleep(120)\n\nclass MyTrial:\n    pass\n"}
CONFIG = """
name: deaf
entrypoint: model_def:MyTrial
hyperparameters: {lr: 0.1}
searcher: {name: single, metric: val_loss, max_length: {batches: 10}}
max_restarts: 0
"""


def test_a_trial_that_does_not_stop_is_killed_and_runs_again(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(orchestrator_module, "STOP_GRACE_SECONDS", 1.0)
    port = free_port()
    settings = MasterSettings(
        home=tmp_path,
        db_url=f"sqlite:///{tmp_path / 'pedl.db'}",
        cpu_slots=1,
        worker_reuse=False,
        spare_workers=0,
    )
    database = make_database(settings)
    orchestrator = Orchestrator(database, settings, master_url=f"http://127.0.0.1:{port}")
    app = create_app(settings, database=database, orchestrator=orchestrator)
    archive = base64.b64encode(make_archive(SLEEPING_MODEL)).decode()
    try:
        with (
            LiveServer(app, port=port) as server,
            httpx.Client(
                base_url=server.url + "/api/v1", timeout=scaled(30), headers=sign_in(database)
            ) as http,
        ):

            def until(check: Callable[[], bool], what: str) -> None:
                deadline = time.monotonic() + scaled(60)
                while not check():
                    assert time.monotonic() < deadline, what
                    time.sleep(0.1)

            def trial() -> dict[str, object]:
                items = http.get(f"/experiments/{experiment_id}/trials").json()["items"]
                return dict(items[0]) if items else {"state": None}

            def log() -> str:
                lines = http.get(f"/trials/{trial()['id']}/logs").json()
                return "\n".join(line["message"] for line in lines)

            created = http.post(
                "/experiments", json={"config": CONFIG, "model_definition": archive}
            )
            assert created.status_code == 201, created.text
            experiment_id = created.json()["id"]
            until(lambda: trial()["state"] == "RUNNING", "the trial runs")
            assert http.post("/agents/master/disable").status_code == 200
            until(lambda: "did not stop in time" in log(), "the trial is killed")
            until(lambda: trial()["state"] == "QUEUED", "the trial waits")
            assert trial()["restarts"] == 0
            assert "not counted against max_restarts" in log()
            queued = http.get("/cluster").json()["queued"]
            assert queued and "is disabled" in queued[0]["reason"], queued

            assert http.post("/agents/master/enable").status_code == 200
            until(lambda: trial()["state"] == "RUNNING", "the trial runs again")
            assert http.post(f"/experiments/{experiment_id}/kill").status_code == 200
            until(lambda: trial()["state"] == "CANCELED", "the trial is killed at the end")
    finally:
        database.dispose()
