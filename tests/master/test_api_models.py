"""The model registry and checkpoints by hand over real HTTP, on SQLite and PostgreSQL:
limits (4xx naming the field), owners, versions, what a registration keeps from deletion."""

from __future__ import annotations

import uuid
from typing import Any

import httpx
import pytest
from sqlalchemy import delete
from sqlalchemy.exc import IntegrityError

from pedl.db import Checkpoint, Database, SQLExperimentStore
from pedl.db import experiments as experiments_repo
from pedl.db import trials as trials_repo
from pedl.vocabulary import ExperimentState, TrialState

from .helpers import LiveServer, bearer, create_experiment, create_trial, sign_in


def _checkpoint(
    client: httpx.Client, trial: tuple[int, str], batches: int, state: str = "COMPLETED"
) -> str:
    trial_id, token = trial
    ckpt = str(uuid.uuid4())
    body = {
        "uuid": ckpt,
        "total_batches": batches,
        "state": state,
        "metadata": {"format": "keras", "steps": batches},
        "resources": {"weights.h5": 10},
    }
    done = client.post(f"/trials/{trial_id}/checkpoints", json=body, headers=bearer(token))
    assert done.status_code == 201, done.text
    return ckpt


def _error(response: httpx.Response, status: int) -> dict[str, Any]:
    assert response.status_code == status, response.text
    error: dict[str, Any] = response.json()["error"]
    return error


def _end(database: Database, experiment_id: int, trial_id: int) -> None:
    with database.session(write=True) as session:
        trials_repo.set_trial_state(session, trial_id, TrialState.COMPLETED)
        experiments_repo.set_experiment_state(session, experiment_id, ExperimentState.COMPLETED)


def test_model_create_list_describe_patch_delete(
    client: httpx.Client, live_server: LiveServer, database: Database
) -> None:
    created = client.post(
        "/models",
        json={"name": "mnist cnn", "description": "digits", "labels": ["a", "b", "a"]},
    )
    assert created.status_code == 201, created.text
    model = created.json()
    assert model["labels"] == ["a", "b"] and model["owner"] == "admin"
    assert model["num_versions"] == 0
    assert _error(client.post("/models", json={"name": "mnist cnn"}), 409)["field"] == "name"
    assert client.get("/models/mnist cnn").json()["id"] == model["id"]
    assert client.get(f"/models/{model['id']}").json()["name"] == "mnist cnn"
    assert client.get("/models/nope").status_code == 404
    client.post("/models", json={"name": "other", "labels": ["b"]})
    page = client.get("/models", params={"name": "CNN"}).json()
    assert [m["name"] for m in page["items"]] == ["mnist cnn"] and page["total"] == 1
    labelled = client.get("/models", params={"label": "b"}).json()
    assert [m["name"] for m in labelled["items"]] == ["mnist cnn", "other"]
    patched = client.patch("/models/mnist cnn", json={"description": "new", "notes": "n"})
    assert patched.json()["description"] == "new" and patched.json()["notes"] == "n"
    # Only its creator or an administrator changes or deletes it.
    with httpx.Client(
        base_url=live_server.url + "/api/v1", headers=sign_in(database, "bob", "bobpassword1")
    ) as bob:
        assert bob.get("/models/mnist cnn").status_code == 200
        assert _error(bob.patch("/models/mnist cnn", json={"notes": "x"}), 403)
        assert _error(bob.delete("/models/mnist cnn"), 403)
        assert bob.post("/models", json={"name": "bobs"}).status_code == 201
        assert bob.delete("/models/bobs").status_code == 204
    assert client.delete("/models/mnist cnn").status_code == 204
    assert client.get("/models/mnist cnn").status_code == 404


@pytest.mark.parametrize(
    ("body", "field"),
    [
        ({"name": ""}, "name"),
        ({"name": "x" * 256}, "name"),
        ({"name": "123"}, "name"),
        ({"name": "a/b"}, "name"),
        ({"name": " padded"}, "name"),
        ({"name": "nul\x00"}, "name"),
        ({"name": "m", "description": "d" * 10_001}, "description"),
        ({"name": "m", "labels": [str(i) for i in range(101)]}, "labels"),
        ({"name": "m", "labels": ["l" * 256]}, "labels"),
        ({"name": "m", "metadata": {"k": "v" * 70_000}}, "metadata"),
        ({"name": "m", "notes": "n" * 100_001}, "notes"),
        ({"name": "m", "extra": 1}, "extra"),
    ],
)
def test_model_limits(client: httpx.Client, body: dict[str, Any], field: str) -> None:
    error = _error(client.post("/models", json=body), 422)
    assert field in (error["field"] or ""), error


def test_versions_keep_their_checkpoint(client: httpx.Client, database: Database) -> None:
    experiment = create_experiment(client)
    trial = create_trial(database, experiment["id"])
    first = _checkpoint(client, trial, 10)
    second = _checkpoint(client, trial, 20)
    active = _checkpoint(client, trial, 30, state="ACTIVE")
    client.post("/models", json={"name": "m"})
    missing = client.post("/models/m/versions", json={"checkpoint_uuid": str(uuid.uuid4())})
    assert missing.status_code == 404
    refused = _error(client.post("/models/m/versions", json={"checkpoint_uuid": active}), 409)
    assert refused["field"] == "checkpoint_uuid" and "ACTIVE" in refused["message"]
    bad = client.post("/models/m/versions", json={"checkpoint_uuid": "not-a-uuid"})
    assert _error(bad, 422)["field"] == "body.checkpoint_uuid"
    v1 = client.post("/models/m/versions", json={"checkpoint_uuid": first, "comment": "c"})
    assert v1.status_code == 201, v1.text
    assert v1.json()["version"] == 1 and v1.json()["checkpoint"]["uuid"] == first
    v2 = client.post("/models/m/versions", json={"checkpoint_uuid": second}).json()
    assert v2["version"] == 2 and v2["model_name"] == "m"
    assert client.get("/models/m/versions/-1").json()["checkpoint"]["uuid"] == second
    assert client.get("/models/m/versions/1").json()["comment"] == "c"
    assert client.get("/models/m/versions/3").status_code == 404
    assert [v["version"] for v in client.get("/models/m/versions").json()] == [2, 1]
    assert client.get("/models/m").json()["num_versions"] == 2

    # A registered checkpoint cannot be deleted by hand; nor the latest of a live trial.
    held = _error(client.delete(f"/checkpoints/{first}"), 409)
    assert "m v1" in held["message"] and held["field"] == "checkpoint_uuid"
    latest = _error(client.delete(f"/checkpoints/{second}"), 409)
    assert "m v2" in latest["message"]
    assert client.delete("/models/m/versions/2").status_code == 204
    latest = _error(client.delete(f"/checkpoints/{second}"), 409)
    assert "latest checkpoint of trial" in latest["message"], latest

    # The experiment ends and is deleted: the registered checkpoint's row stays.
    _end(database, experiment["id"], trial[0])
    assert client.delete(f"/checkpoints/{second}").status_code == 204
    assert client.get(f"/checkpoints/{second}").json()["state"] == "DELETED"
    assert client.delete(f"/checkpoints/{second}").status_code == 204  # again: nothing to do
    gone = client.post("/models/m/versions", json={"checkpoint_uuid": second})
    assert "DELETED" in _error(gone, 409)["message"]
    assert client.delete(f"/experiments/{experiment['id']}").status_code == 204
    kept = client.get(f"/checkpoints/{first}").json()
    assert kept["state"] == "COMPLETED" and kept["trial_id"] == trial[0]
    assert kept["experiment_id"] == experiment["id"]
    assert client.get(f"/checkpoints/{second}").status_code == 404
    assert client.get("/models/m/versions/1").json()["checkpoint"]["uuid"] == first
    # A trial created later (even under a reused id) does not list it.
    later = create_trial(database, create_experiment(client)["id"])
    assert client.get(f"/trials/{later[0]}/checkpoints").json()["total"] == 0


def test_a_checkpoint_is_one_version_of_a_model(client: httpx.Client, database: Database) -> None:
    """Registering a checkpoint a second time in the same model is refused (409, naming the
    version that holds it); another model may hold it too."""
    trial = create_trial(database, create_experiment(client)["id"])
    ckpt, other = _checkpoint(client, trial, 10), _checkpoint(client, trial, 20)
    for name in ("twice", "elsewhere"):
        client.post("/models", json={"name": name})
    assert client.post("/models/twice/versions", json={"checkpoint_uuid": other}).status_code == 201
    first = client.post("/models/twice/versions", json={"checkpoint_uuid": ckpt})
    assert first.status_code == 201 and first.json()["version"] == 2
    again = _error(client.post("/models/twice/versions", json={"checkpoint_uuid": ckpt}), 409)
    assert again["field"] == "checkpoint_uuid"
    assert "already version 2 of model 'twice'" in again["message"], again
    assert client.get("/models/twice").json()["num_versions"] == 2
    elsewhere = client.post("/models/elsewhere/versions", json={"checkpoint_uuid": ckpt})
    assert elsewhere.status_code == 201 and elsewhere.json()["version"] == 1
    # What a checkpoints table marks: the versions holding each of its checkpoints.
    free = _checkpoint(client, trial, 30)
    held = client.get("/checkpoints/model-versions", params={"uuid": [ckpt, other, free]})
    assert held.status_code == 200, held.text
    assert held.json() == [
        {"checkpoint_uuid": ckpt, "model_name": "elsewhere", "version": 1},
        {"checkpoint_uuid": other, "model_name": "twice", "version": 1},
        {"checkpoint_uuid": ckpt, "model_name": "twice", "version": 2},
    ]
    assert _error(client.get("/checkpoints/model-versions"), 422)["field"] == "query.uuid"


def test_checkpoint_metadata_changes(
    client: httpx.Client, live_server: LiveServer, database: Database
) -> None:
    trial = create_trial(database, create_experiment(client)["id"])
    ckpt = _checkpoint(client, trial, 10)
    url = f"/checkpoints/{ckpt}/metadata"
    changed = client.patch(url, json={"add": {"note": "good", "steps": 11}, "remove": ["format"]})
    assert changed.status_code == 200, changed.text
    assert changed.json()["metadata"] == {"note": "good", "steps": 11}
    assert client.patch(url, json={"remove": ["note"]}).json()["metadata"] == {"steps": 11}
    too_big = client.patch(url, json={"add": {"k": "v" * 70_000}})
    assert _error(too_big, 422)["field"] == "body.add"
    too_many = client.patch(url, json={"remove": [str(i) for i in range(1001)]})
    assert _error(too_many, 422)["field"] == "body.remove"
    with httpx.Client(
        base_url=live_server.url + "/api/v1", headers=sign_in(database, "bob", "bobpassword1")
    ) as bob:
        assert _error(bob.patch(url, json={"add": {"x": 1}}), 403)
        assert _error(bob.delete(f"/checkpoints/{ckpt}"), 403)


def test_retention_never_sees_or_claims_a_registered_checkpoint(
    client: httpx.Client, database: Database
) -> None:
    experiment = create_experiment(client)
    trial = create_trial(database, experiment["id"])
    kept, doomed, latest = (_checkpoint(client, trial, b) for b in (10, 20, 30))
    client.post("/models", json={"name": "keep"})
    assert client.post("/models/keep/versions", json={"checkpoint_uuid": kept}).status_code == 201
    store = SQLExperimentStore(database)
    loaded = {c.storage_id for c in store.load(experiment["id"]).checkpoints}
    assert loaded == {doomed, latest}  # what the retention rules rank
    assert store.claim_checkpoints_for_deletion([kept, doomed]) == [doomed]
    states = {u: client.get(f"/checkpoints/{u}").json()["state"] for u in (kept, doomed)}
    assert states == {kept: "COMPLETED", doomed: "DELETED"}
    # Its row cannot go while a version holds it, whatever path tries.
    with pytest.raises(IntegrityError), database.session(write=True) as session:
        session.execute(delete(Checkpoint).where(Checkpoint.uuid == kept))
