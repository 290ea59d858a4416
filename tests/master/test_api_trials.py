"""Trials, metrics, logs and checkpoints over real HTTP, with trial-token scoping."""

from __future__ import annotations

import threading
import uuid
from typing import Any

import httpx
import pytest
from sqlalchemy import func, select

from pedl.db import Database, Metric, TrialLog
from tests.waits import scaled

from .helpers import LiveServer, bearer, create_experiment, create_trial


@pytest.fixture
def trial(client: httpx.Client, database: Database) -> tuple[int, str]:
    """A trial of a fresh experiment: (id, token)."""
    return create_trial(database, create_experiment(client)["id"])


def _rows(database: Database, model: type[Metric] | type[TrialLog], trial_id: int) -> int:
    with database.session() as session:
        return session.scalar(select(func.count()).where(model.trial_id == trial_id)) or 0


def _metrics_batch(start: int, stop: int) -> dict[str, Any]:
    rows: list[dict[str, Any]] = [
        {
            "kind": "training",
            "total_batches": b,
            "total_records": 32 * b,
            "metrics": {"loss": 10.0 / b, "acc": b / 1000},
        }
        for b in range(start, stop, 10)
    ]
    return {"rows": rows}


def test_get_trial(client: httpx.Client, trial: tuple[int, str]) -> None:
    trial_id, token = trial
    body = client.get(f"/trials/{trial_id}").json()
    assert body["id"] == trial_id and body["seed"] == 7 and body["restarts"] == 0
    assert token not in str(body) and "token_hash" not in body
    assert client.get("/trials/55555").status_code == 404


def test_metrics_resend_is_idempotent(
    client: httpx.Client, database: Database, trial: tuple[int, str]
) -> None:
    trial_id, token = trial
    url = f"/trials/{trial_id}/metrics"
    first = client.post(url, json=_metrics_batch(10, 510), headers=bearer(token))
    assert first.status_code == 200 and first.json() == {"trial_id": trial_id, "rows": 50}
    # The trial crashes, resumes from a checkpoint at 300 batches and re-reports 310..600.
    again = client.post(url, json=_metrics_batch(310, 610), headers=bearer(token))
    assert again.status_code == 200
    assert _rows(database, Metric, trial_id) == 60
    validation = {
        "rows": [
            {
                "kind": "validation",
                "total_batches": 600,
                "metrics": {"val_loss": 0.25, "bad": "NaN", "big": "Infinity"},
            }
        ]
    }
    assert client.post(url, json=validation, headers=bearer(token)).status_code == 200
    assert client.post(url, json=validation, headers=bearer(token)).status_code == 200
    assert _rows(database, Metric, trial_id) == 61

    training = client.get(url, params={"kind": "training", "after_batches": 580}).json()
    assert [r["total_batches"] for r in training] == [590, 600]
    assert training[0]["metrics"] == {"loss": 10.0 / 590, "acc": 0.59}
    assert training[0]["total_records"] == 32 * 590
    (val,) = client.get(url, params={"kind": "validation"}).json()
    assert val["metrics"] == {"val_loss": 0.25, "bad": "NaN", "big": "Infinity"}
    described = client.get(f"/trials/{trial_id}").json()
    assert described["total_batches"] == 600 and described["best_validation"] == 0.25


def test_logs_resend_is_idempotent(
    client: httpx.Client, database: Database, trial: tuple[int, str]
) -> None:
    trial_id, token = trial
    url = f"/trials/{trial_id}/logs"
    lines = [{"seq": i, "message": f"epoch {i}", "stream": "stdout"} for i in range(10)]
    first = client.post(url, json={"lines": lines}, headers=bearer(token)).json()
    assert first == {"trial_id": trial_id, "received": 10, "inserted": 10}
    resend = [*lines[7:], {"seq": 10, "message": "done\x00", "level": "INFO"}]
    second = client.post(url, json={"lines": resend}, headers=bearer(token)).json()
    assert second == {"trial_id": trial_id, "received": 4, "inserted": 1}
    assert _rows(database, TrialLog, trial_id) == 11
    page = client.get(url, params={"offset": 8, "limit": 2}).json()
    assert [(line["seq"], line["message"]) for line in page] == [(8, "epoch 8"), (9, "epoch 9")]
    (last,) = client.get(url, params={"after_seq": 9}).json()
    assert last["message"] == "done\ufffd" and last["level"] == "INFO"


def test_checkpoint_register_and_get(client: httpx.Client, trial: tuple[int, str]) -> None:
    trial_id, token = trial
    ckpt = str(uuid.uuid4())
    metrics = {"rows": [{"kind": "validation", "total_batches": 100, "metrics": {"val_loss": 0.5}}]}
    client.post(f"/trials/{trial_id}/metrics", json=metrics, headers=bearer(token))
    body = {
        "uuid": ckpt,
        "total_batches": 100,
        "state": "ACTIVE",
        "metadata": {"format": "keras"},
        "resources": {"model/weights.h5": 1000, "state.json": 24},
    }
    created = client.post(f"/trials/{trial_id}/checkpoints", json=body, headers=bearer(token))
    assert created.status_code == 201, created.text
    assert created.json()["state"] == "ACTIVE" and created.json()["size"] == 1024
    assert client.get(f"/trials/{trial_id}").json()["latest_checkpoint_uuid"] is None
    body["state"] = "COMPLETED"
    done = client.post(f"/trials/{trial_id}/checkpoints", json=body, headers=bearer(token))
    assert done.status_code == 201 and done.json()["state"] == "COMPLETED"
    got = client.get(f"/checkpoints/{ckpt}").json()
    assert got["trial_id"] == trial_id and got["metadata"] == {"format": "keras"}
    assert got["validation_metrics"] == {"val_loss": 0.5}
    described = client.get(f"/trials/{trial_id}").json()
    assert described["latest_checkpoint_uuid"] == ckpt == described["best_checkpoint_uuid"]
    listed = client.get(f"/trials/{trial_id}/checkpoints").json()
    assert listed["total"] == 1 and listed["items"][0]["uuid"] == ckpt
    assert client.get(f"/checkpoints/{uuid.uuid4()}").status_code == 404
    moved = dict(body, total_batches=200)
    conflict = client.post(f"/trials/{trial_id}/checkpoints", json=moved, headers=bearer(token))
    assert conflict.status_code == 409 and conflict.json()["error"]["field"] == "total_batches"


WRITE_ROUTES = [
    ("metrics", {"rows": [{"kind": "training", "total_batches": 1, "metrics": {"loss": 1.0}}]}),
    ("logs", {"lines": [{"seq": 0, "message": "hi"}]}),
    ("checkpoints", {"uuid": "7d1cbb2c-0d4b-4c1e-9d3c-2f1d6f4d9c10", "total_batches": 1}),
]


@pytest.mark.parametrize(("route", "body"), WRITE_ROUTES, ids=[r for r, _ in WRITE_ROUTES])
def test_trial_token_scoping(
    client: httpx.Client, database: Database, route: str, body: dict[str, Any]
) -> None:
    experiment_id = create_experiment(client)["id"]
    mine, my_token = create_trial(database, experiment_id)
    _other, other_token = create_trial(database, experiment_id)
    url = f"/trials/{mine}/{route}"

    missing = client.post(url, json=body)
    assert missing.status_code == 401 and missing.headers["www-authenticate"] == "Bearer"
    assert missing.json()["error"]["field"] == "Authorization"
    assert client.post(url, json=body, headers=bearer("not-a-token")).status_code == 401
    basic = client.post(url, json=body, headers={"Authorization": "Basic dXNlcjpwdw=="})
    assert basic.status_code == 401
    wrong = client.post(url, json=body, headers=bearer(other_token))
    assert wrong.status_code == 403 and "not valid for trial" in wrong.json()["error"]["message"]
    assert client.post(url, json=body, headers=bearer(my_token)).status_code in (200, 201)
    with database.session() as session:
        rows = session.scalar(select(func.count()).select_from(Metric)) or 0
        rows += session.scalar(select(func.count()).select_from(TrialLog)) or 0
    assert rows == (1 if route != "checkpoints" else 0)


def test_concurrent_reporting_loses_nothing(
    client: httpx.Client, database: Database, live_server: LiveServer
) -> None:
    experiment_id = create_experiment(client)["id"]
    trials = [create_trial(database, experiment_id) for _ in range(4)]
    failures: list[str] = []

    def report(trial_id: int, token: str, offset: int) -> None:
        with httpx.Client(base_url=live_server.url + "/api/v1", timeout=scaled(30)) as http:
            for chunk in range(10):
                start = offset + chunk * 100
                response = http.post(
                    f"/trials/{trial_id}/metrics",
                    json=_metrics_batch(start + 10, start + 110),
                    headers=bearer(token),
                )
                if response.status_code != 200:
                    failures.append(response.text)

    threads = [
        threading.Thread(target=report, args=(trial_id, token, offset))
        for trial_id, token in trials
        for offset in (0, 500)  # two reporters per trial, overlapping keys
    ]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()
    assert failures == []
    assert [_rows(database, Metric, trial_id) for trial_id, _ in trials] == [150] * 4
