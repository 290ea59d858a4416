"""Multi-worker trials on a real master (issue 20): ``resources.slots_per_trial: 2`` on a
master with two CPU slots runs the trial as two real worker processes (the framework-free
model of ``gang_model``: core-API collectives over loopback), gang-placed; their output is in
the trial's log tagged by rank; a worker that dies or hangs ends the attempt, the others are
stopped, and the trial restarts from its checkpoint and completes. On SQLite and PostgreSQL.
"""

from __future__ import annotations

import base64
import contextlib
import json
import os
import random
import signal
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import httpx
import pytest
from click.testing import CliRunner

from pedl import model_def
from pedl.cli import cli
from pedl.client import Client
from pedl.master import MasterSettings, create_app
from pedl.master.api._app import make_database
from pedl.master.orchestrator import Orchestrator
from tests.waits import scaled, until

from .e2e import free_port
from .helpers import LiveServer, sign_in

MODEL_DIR = Path(__file__).parent / "gang_model"
CONFIG = """
name: gang
entrypoint: model_def:GangTrial
hyperparameters: {{period: 5, step_seconds: {step}}}
searcher: {{name: single, metric: val_loss, max_length: {{batches: {batches}}}}}
resources: {{slots_per_trial: 2}}
max_restarts: {max_restarts}
"""


@contextlib.contextmanager
def _master(
    db_url: str, home: Path, *, cpu_slots: int = 2, heartbeat_timeout: float = 60.0
) -> Iterator[httpx.Client]:
    port = free_port()
    settings = MasterSettings(
        home=home,
        db_url=db_url,
        cpu_slots=cpu_slots,
        worker_reuse=False,
        spare_workers=0,
        worker_heartbeat_timeout=heartbeat_timeout,
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
            yield http
    finally:
        database.dispose()


def _create(
    http: httpx.Client, *, batches: int = 20, step: float = 0.05, max_restarts: int = 3
) -> int:
    archive = base64.b64encode(model_def.package(MODEL_DIR)).decode()
    config = CONFIG.format(batches=batches, step=step, max_restarts=max_restarts)
    response = http.post("/experiments", json={"config": config, "model_definition": archive})
    assert response.status_code == 201, response.text
    return int(response.json()["id"])


def _trial(http: httpx.Client, experiment_id: int) -> dict[str, Any]:
    (item,) = http.get(f"/experiments/{experiment_id}/trials").json()["items"]
    return dict(item)


def _trial_id(http: httpx.Client, experiment_id: int) -> int | None:
    items = http.get(f"/experiments/{experiment_id}/trials").json()["items"]
    return int(items[0]["id"]) if items else None


def _logs(http: httpx.Client, trial_id: int, **params: Any) -> list[dict[str, Any]]:
    response = http.get(f"/trials/{trial_id}/logs", params={"limit": 10000, **params})
    assert response.status_code == 200, response.text
    return list(response.json())


def _completed(http: httpx.Client, experiment_id: int, timeout: float = 120) -> dict[str, Any]:
    def done() -> dict[str, Any] | None:
        body = http.get(f"/experiments/{experiment_id}").json()
        if body["state"] in {"ERROR", "CANCELED"}:
            trial = _trial(http, experiment_id)
            text = "\n".join(line["message"] for line in _logs(http, trial["id"]))
            raise AssertionError(f"experiment {body['state']}: {trial}\n{text}")
        return _trial(http, experiment_id) if body["state"] == "COMPLETED" else None

    try:
        result: dict[str, Any] = until(done, "the experiment to complete", timeout)
    except AssertionError:
        trial = _trial(http, experiment_id)
        text = "\n".join(line["message"] for line in _logs(http, trial["id"]))
        raise AssertionError(f"{trial}\n{text}") from None
    return result


def _running_workers(http: httpx.Client, trial_id: int) -> list[dict[str, Any]] | None:
    workers = http.get(f"/trials/{trial_id}/workers").json()
    if len(workers) == 2 and all(w["state"] == "running" for w in workers):
        return list(workers)
    return None


def _process_gone(pid: int) -> bool:
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return True
    # a zombie is gone for our purpose
    with contextlib.suppress(OSError):
        return Path(f"/proc/{pid}/stat").read_text().split()[2] == "Z"
    return True


def test_two_workers_run_together_with_their_environment_and_ranked_logs(
    fresh_db_url: str, tmp_path: Path
) -> None:
    with _master(fresh_db_url, tmp_path / "home") as http:
        experiment_id = _create(http)
        trial_id = until(lambda: _trial_id(http, experiment_id), "the trial", timeout=90)
        workers = until(lambda: _running_workers(http, trial_id), "two running workers", timeout=90)
        assert [w["rank"] for w in workers] == [0, 1]
        assert len({w["pid"] for w in workers}) == 2
        assert all(w["heartbeat_age"] is not None for w in workers)
        cluster = http.get("/cluster").json()
        (running,) = cluster["running"]
        assert running["slots"] == 2 and cluster["slots_used"] == 2
        assert {w["pid"] for w in running["workers"]} <= {w["pid"] for w in workers}
        # the SDK and `pedl trial describe` show them
        master_url = str(http.base_url).removesuffix("/api/v1/")
        with Client(master_url) as sdk:
            shown = sdk.get_trial(trial_id).workers()
        assert [(w.rank, w.pid) for w in shown] == [(w["rank"], w["pid"]) for w in workers]
        described = CliRunner().invoke(
            cli, ["--master", master_url, "trial", "describe", str(trial_id), "--json"]
        )
        assert described.exit_code == 0, described.output
        assert [w["rank"] for w in json.loads(described.output)["workers"]] == [0, 1]
        table = CliRunner().invoke(
            cli, ["--master", master_url, "trial", "describe", str(trial_id)]
        )
        assert table.exit_code == 0 and "Workers of trial" in table.output, table.output
        assert "0 (chief)" in table.output and str(workers[1]["pid"]) in table.output

        trial = _completed(http, experiment_id)
        assert trial["restarts"] == 0 and trial["total_batches"] == 20
        # every worker sampled its system metrics (a last sample as it ended, at least)
        system = http.get(f"/trials/{trial_id}/system-metrics").json()
        assert {sample["rank"] for sample in system["samples"]} == {0, 1}, system

        every = _logs(http, trial_id)
        seen = {}
        for line in every:
            if line["message"].startswith("gang-worker "):
                info = json.loads(line["message"][len("gang-worker ") :])
                assert info["rank"] == line["rank"], line
                seen[line["rank"]] = info
        assert sorted(seen) == [0, 1]
        for rank, info in seen.items():
            assert info["size"] == 2 and info["local_rank"] == rank
            assert info["ranks"] == [0, 1]
            assert info["tf_config"]["task"] == {"type": "worker", "index": rank}
            assert info["cuda"] == ""
        assert seen[0]["tf_config"]["cluster"] == seen[1]["tf_config"]["cluster"]
        addresses = seen[0]["tf_config"]["cluster"]["worker"]
        ports = {a.rsplit(":", 1)[1] for a in addresses}
        ports |= {seen[0]["pub_port"], seen[0]["pull_port"]}
        assert len(ports) == 4 and seen[0]["pub_port"] == seen[1]["pub_port"]
        assert {seen[0]["pid"], seen[1]["pid"]} == {w["pid"] for w in workers}

        only_one = _logs(http, trial_id, rank=1)
        assert only_one and all(line["rank"] == 1 for line in only_one)
        assert any("rank 1 done at batch 20" in line["message"] for line in only_one)
        chief = _logs(http, trial_id, rank=0)
        assert any("rank 0 done at batch 20" in line["message"] for line in chief)
        assert not any("rank 1 done" in line["message"] for line in chief)
        printed = CliRunner().invoke(
            cli, ["--master", master_url, "trial", "logs", str(trial_id), "--rank", "1"]
        )
        assert printed.exit_code == 0, printed.output
        assert "rank 1 done at batch 20" in printed.output
        assert "rank 0 done" not in printed.output and "[master]" not in printed.output
        with Client(master_url) as sdk:
            sdk_lines = list(sdk.get_trial(trial_id).logs(rank=0))
        assert sdk_lines and all(line.rank == 0 for line in sdk_lines)
        # the master's own lines have no rank
        assert any(
            line["rank"] is None and "2 worker processes" in line["message"] for line in every
        )
        # after the attempt, the workers of the latest one are still shown
        ended = http.get(f"/trials/{trial_id}/workers").json()
        assert [w["state"] for w in ended] == ["exited", "exited"] or ended[0]["exit_code"] == 0


def _running_past_a_checkpoint(
    http: httpx.Client, experiment_id: int
) -> tuple[int, list[dict[str, Any]]]:
    """The experiment's trial and its two running workers, once it has a checkpoint."""
    trial_id = until(lambda: _trial_id(http, experiment_id), "the trial", timeout=90)
    workers = until(lambda: _running_workers(http, trial_id), "two running workers", timeout=90)
    until(
        lambda: _trial(http, experiment_id)["latest_checkpoint_uuid"],
        "a checkpoint",
        timeout=90,
    )
    return trial_id, workers


@pytest.mark.parametrize("victim", [1, 0])
def test_a_sigkilled_worker_restarts_the_trial_from_its_checkpoint(
    fresh_db_url: str, tmp_path: Path, victim: int
) -> None:
    draw = random.Random(20 + victim)
    with _master(fresh_db_url, tmp_path / "home") as http:
        experiment_id = _create(http, batches=30)
        trial_id, workers = _running_past_a_checkpoint(http, experiment_id)
        # a moment after the first checkpoint (5 batches), drawn with a seed
        time.sleep(draw.uniform(0.0, 0.4))
        pids = {w["rank"]: w["pid"] for w in workers}
        os.kill(pids[victim], signal.SIGKILL)
        until(lambda: all(_process_gone(pid) for pid in pids.values()), "both workers gone", 30)
        trial = _completed(http, experiment_id)
        assert trial["restarts"] == 1 and trial["total_batches"] == 30
        text = "\n".join(line["message"] for line in _logs(http, trial_id))
        assert f"rank {victim} died (signal SIGKILL)" in text
        assert "restored batch" in text
        restored = [
            line
            for line in _logs(http, trial_id)
            if "restored batch" in line["message"] and line["rank"] is not None
        ]
        assert {line["rank"] for line in restored} == {0, 1}


def test_a_stopped_worker_is_noticed_and_the_trial_restarts(
    fresh_db_url: str, tmp_path: Path
) -> None:
    with _master(fresh_db_url, tmp_path / "home", heartbeat_timeout=4) as http:
        experiment_id = _create(http, batches=30)
        trial_id, workers = _running_past_a_checkpoint(http, experiment_id)
        stopped_at = time.monotonic()
        os.kill(workers[1]["pid"], signal.SIGSTOP)
        until(lambda: _process_gone(workers[1]["pid"]), "the hung worker killed", 30)
        assert time.monotonic() - stopped_at < 4 + 10
        trial = _completed(http, experiment_id)
        assert trial["restarts"] == 1 and trial["total_batches"] == 30
        text = "\n".join(line["message"] for line in _logs(http, trial_id))
        assert "rank 1 (pid" in text and "hung: no heartbeat for" in text


def test_a_two_worker_trial_on_a_one_slot_master_is_refused(
    fresh_db_url: str, tmp_path: Path
) -> None:
    with _master(fresh_db_url, tmp_path / "home", cpu_slots=1) as http:
        archive = base64.b64encode(model_def.package(MODEL_DIR)).decode()
        config = CONFIG.format(batches=10, step=0.05, max_restarts=0)
        response = http.post("/experiments", json={"config": config, "model_definition": archive})
        assert response.status_code == 422, response.text
        assert "slots_per_trial" in response.text and "needs 2 slots" in response.text
