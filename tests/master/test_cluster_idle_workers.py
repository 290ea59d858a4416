"""The workers a master keeps ready for trials show on ``GET /cluster`` while idle
(``idle_workers``): the spare it starts before any trial needs it, and, once a trial of an
experiment ran in it, that experiment's warm worker (with the trial it ran) beside a new
spare, each holding one of the slots. A real master app (its orchestrator and local resource
manager, real worker processes) over HTTP on SQLite."""

from __future__ import annotations

import base64
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import Any

import httpx

from pedl.master import MasterSettings, create_app
from pedl.master.api._app import make_database
from pedl.master.orchestrator import Orchestrator
from tests.waits import scaled, until

from .e2e import free_port
from .helpers import LiveServer, make_archive, sign_in

# A trial that rejects its hyperparameters at once: it ends normally (INVALID_HP), and its
# worker stays, idle, for the experiment's next trial.
REJECTING_MODEL = {
    "model_def.py": b"import pedl\nfrom pedl.keras import TFKerasTrial\n\n\n"
    b"class MyTrial(TFKerasTrial):\n"
    b"    def __init__(self, context):\n"
    b"        raise pedl.InvalidHP('not these')\n"
}
CONFIG = """
name: idle
entrypoint: model_def:MyTrial
hyperparameters: {global_batch_size: 4}
searcher: {name: single, metric: val_loss, max_length: {batches: 10}}
"""


def test_the_spare_and_the_warm_worker_show_while_idle(tmp_path: Path) -> None:
    port = free_port()
    settings = MasterSettings(
        home=tmp_path / "home", cpu_slots=2, worker_reuse=True, spare_workers=1
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

            def idle() -> list[dict[str, Any]]:
                return list(http.get("/cluster").json()["idle_workers"])

            (spare,) = until(idle, "the spare worker on the cluster")
            assert spare["spare"] is True and spare["pid"] > 0
            assert spare["experiment_id"] is None and spare["trial_id"] is None
            since = datetime.fromisoformat(spare["idle_since"].replace("Z", "+00:00"))
            assert abs(datetime.now(UTC) - since) < timedelta(minutes=5)
            assert http.get("/cluster").json()["slots_used"] == 0  # no trial runs

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

            def both() -> list[dict[str, Any]] | None:
                workers = idle()
                return workers if len(workers) == 2 else None

            warm, new_spare = sorted(
                until(both, "a warm worker and a new spare"), key=lambda w: w["spare"]
            )
            # The trial ran in the spare, which is now the experiment's.
            assert warm["pid"] == spare["pid"] and warm["spare"] is False
            assert warm["experiment_id"] == experiment_id and warm["trial_id"] == trial["id"]
            assert new_spare["spare"] is True and new_spare["pid"] != spare["pid"]
    finally:
        database.dispose()
