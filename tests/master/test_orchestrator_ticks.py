"""The orchestrator's loop is idle while nothing changes: trials that wait for a slot do not
make it run again and again (it did: each tick's "still queued" woke the next at once, a CPU
core spent while trials waited, slowing every trial process beside it)."""

from __future__ import annotations

import base64
import time
from pathlib import Path

import httpx
import pytest

from pedl.master import MasterSettings, create_app
from pedl.master.api._app import make_database
from pedl.master.orchestrator import Orchestrator
from pedl.master.orchestrator._orchestrator import TICK_SECONDS
from tests.waits import scaled

from .e2e import free_port
from .helpers import LiveServer, make_archive, sign_in

# The first trial's process holds the only slot (its model definition sleeps on import); the
# other two wait for it.
SLEEPING_MODEL = {"model_def.py": b"import time\ntime.sleep(120)\n\nclass MyTrial:\n    pass\n"}
CONFIG = """
name: waits
entrypoint: model_def:MyTrial
hyperparameters: {lr: {type: double, minval: 0.01, maxval: 0.1}}
searcher:
  name: random
  metric: val_loss
  max_trials: 3
  max_length: {batches: 10}
"""
WINDOW_S = 2.0


def test_the_loop_idles_while_trials_wait_for_a_slot(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
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
    ticks = 0
    tick = orchestrator._tick

    def counted_tick() -> None:
        nonlocal ticks
        ticks += 1
        tick()

    monkeypatch.setattr(orchestrator, "_tick", counted_tick)
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
            deadline = time.monotonic() + scaled(60)
            while True:
                items = http.get(f"/experiments/{experiment_id}/trials").json()["items"]
                states = sorted(t["state"] for t in items)
                if states == ["QUEUED", "QUEUED", "RUNNING"]:
                    break
                assert time.monotonic() < deadline, states
                time.sleep(0.1)
            before = ticks
            time.sleep(WINDOW_S)
            during = ticks - before
            items = http.get(f"/experiments/{experiment_id}/trials").json()["items"]
            assert sorted(t["state"] for t in items) == ["QUEUED", "QUEUED", "RUNNING"]
    finally:
        database.dispose()
    # One tick per TICK_SECONDS, and a few more for API calls; the spinning loop made 5,772.
    assert during <= WINDOW_S / TICK_SECONDS + 10, during
