"""``det experiment set max-slots / priority`` on a running master: its scheduler acts on the
new values at once, raised or lowered (trial processes that sleep hold the slots; nothing
trains)."""

from __future__ import annotations

import base64
import time
from collections.abc import Callable
from pathlib import Path

import httpx

from pedl.master import MasterSettings, create_app
from pedl.master.api._app import make_database
from pedl.master.orchestrator import Orchestrator
from tests.waits import scaled

from .e2e import free_port
from .helpers import LiveServer, make_archive, sign_in

SLEEPING_MODEL = {"model_def.py": b"import time\ntime.sleep(120)\n\nclass MyTrial:\n    pass\n"}
CONFIG = """
name: {name}
entrypoint: model_def:MyTrial
hyperparameters: {{lr: {{type: double, minval: 0.01, maxval: 0.1}}}}
searcher:
  name: random
  metric: val_loss
  max_trials: {trials}
  max_length: {{batches: 10}}
resources: {{max_slots: 1}}
"""


def test_max_slots_and_priority_act_at_once(tmp_path: Path) -> None:
    port = free_port()
    settings = MasterSettings(
        home=tmp_path,
        db_url=f"sqlite:///{tmp_path / 'pedl.db'}",
        cpu_slots=2,
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

            def create(name: str, trials: int) -> int:
                config = CONFIG.format(name=name, trials=trials)
                answer = http.post(
                    "/experiments", json={"config": config, "model_definition": archive}
                )
                assert answer.status_code == 201, answer.text
                return int(answer.json()["id"])

            def states(experiment_id: int) -> list[str]:
                items = http.get(f"/experiments/{experiment_id}/trials").json()["items"]
                return [t["state"] for t in items]

            def until(check: Callable[[], bool], what: str) -> None:
                deadline = time.monotonic() + scaled(60)
                while not check():
                    assert time.monotonic() < deadline, what
                    time.sleep(0.1)

            first = create("first", 3)
            until(lambda: sorted(states(first)) == ["QUEUED", "QUEUED", "RUNNING"], "max_slots 1")
            time.sleep(1.0)  # ticks go by: the cap holds
            assert sorted(states(first)) == ["QUEUED", "QUEUED", "RUNNING"]
            queued = http.get("/cluster").json()["queued"]
            assert any("max_slots" in str(t.get("reason")) for t in queued), queued
            raised = http.patch(f"/experiments/{first}", json={"resources": {"max_slots": 2}})
            assert raised.status_code == 200, raised.text
            until(lambda: sorted(states(first)) == ["QUEUED", "RUNNING", "RUNNING"], "max_slots 2")

            second = create("second", 1)
            until(lambda: states(second) == ["QUEUED"], "the second waits for a slot")
            # Without a priority the first experiment's older queued trial would go next.
            urgent = http.patch(f"/experiments/{second}", json={"resources": {"priority": 1}})
            assert urgent.status_code == 200, urgent.text
            running = [
                t["id"]
                for t in http.get(f"/experiments/{first}/trials").json()["items"]
                if t["state"] == "RUNNING"
            ]
            assert http.post(f"/trials/{running[0]}/kill").status_code == 202
            until(lambda: states(second) == ["RUNNING"], "the urgent experiment's trial starts")
            assert sorted(states(first)) == ["CANCELED", "QUEUED", "RUNNING"]
            stored = http.get(f"/experiments/{second}").json()["config"]["resources"]
            assert stored["priority"] == 1  # what a restarted master reads

            lowered = http.patch(f"/experiments/{first}", json={"resources": {"max_slots": 1}})
            assert lowered.status_code == 200, lowered.text
            (urgent_trial,) = http.get(f"/experiments/{second}/trials").json()["items"]
            assert http.post(f"/trials/{urgent_trial['id']}/kill").status_code == 202
            until(lambda: states(second) == ["CANCELED"], "the urgent trial is killed")
            time.sleep(1.0)  # ticks go by with a free slot: the lowered cap holds
            assert sorted(states(first)) == ["CANCELED", "QUEUED", "RUNNING"]
    finally:
        database.dispose()
