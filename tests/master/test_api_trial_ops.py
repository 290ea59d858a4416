"""The trial-operation routes on an API-only master (no orchestrator): auth and shapes."""

from __future__ import annotations

import httpx

from pedl.db import Database

from .helpers import bearer, create_experiment, create_trial


def test_start_info_needs_the_trials_token(client: httpx.Client, database: Database) -> None:
    experiment = create_experiment(client)
    trial_id, token = create_trial(database, experiment["id"], hparams={"lr": 0.5}, seed=11)
    _other_id, other_token = create_trial(database, experiment["id"])
    path = f"/trials/{trial_id}/start"
    assert client.get(path).status_code == 401
    assert client.get(path, headers=bearer(other_token)).status_code == 403
    response = client.get(path, headers=bearer(token))
    assert response.status_code == 200, response.text
    body = response.json()
    assert body["hparams"] == {"lr": 0.5} and body["seed"] == 11
    assert body["experiment_id"] == experiment["id"]
    assert body["latest_checkpoint"] is None
    assert body["config"]["searcher"]["metric"] == "val_loss"
    # Without checkpoint_storage in the config, the master's checkpoint_dir is filled in.
    storage = body["config"]["checkpoint_storage"]
    assert storage["type"] == "shared_fs" and storage["host_path"].endswith("checkpoints")


def test_orchestrator_routes_answer_409_without_an_orchestrator(
    client: httpx.Client, database: Database
) -> None:
    experiment = create_experiment(client)
    trial_id, token = create_trial(database, experiment["id"])
    headers = bearer(token)
    calls = [
        client.get(f"/trials/{trial_id}/searcher/operation", headers=headers),
        client.get(f"/trials/{trial_id}/preempt", headers=headers),
        client.post(
            f"/trials/{trial_id}/searcher/completed",
            json={"length": 5, "metric": 0.5},
            headers=headers,
        ),
        client.post(f"/trials/{trial_id}/exit", json={"outcome": "COMPLETED"}, headers=headers),
    ]
    for response in calls:
        assert response.status_code == 409, response.text
        assert "orchestrator" in response.json()["error"]["message"]
    assert client.get(f"/trials/{trial_id}/preempt").status_code == 401
    scheduling = client.get(f"/trials/{trial_id}/scheduling").json()
    assert scheduling == {"trial_id": trial_id, "state": "ACTIVE", "queue_reason": None}
    bad = client.post(
        f"/trials/{trial_id}/searcher/completed",
        json={"length": -1, "metric": 0.5},
        headers=headers,
    )
    assert bad.status_code == 422
    for body in (
        {"outcome": "DONE"},
        {"outcome": "ERRORED", "error": {"type": "E", "message": "x" * 4001}},
        {"outcome": "ERRORED", "error": {"type": "", "message": "m"}},
        {"outcome": "ERRORED", "error": {"type": "E", "message": "nul\u0000"}},
        {"outcome": "ERRORED", "extra": 1},
    ):
        refused = client.post(f"/trials/{trial_id}/exit", json=body, headers=headers)
        assert refused.status_code == 422, body
