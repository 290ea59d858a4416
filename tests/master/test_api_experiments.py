"""The experiments API over real HTTP, on SQLite and PostgreSQL."""

from __future__ import annotations

import base64
import io
import tarfile
import uuid
import warnings
from pathlib import Path
from typing import Any

import httpx
import pytest

from pedl.client import Client, PEDLError
from pedl.config import ConfigWarning
from pedl.db import Database
from pedl.db import checkpoints as checkpoints_repo
from pedl.db import experiments as experiments_repo
from pedl.db import trials as trials_repo
from pedl.master.api._convert import TRIAL_PUBLIC_FIELDS
from pedl.master.api._schemas import Page, TrialListItem, TrialPublic
from pedl.searcher import missing_optuna_requirements
from pedl.vocabulary import ExperimentState, TrialOutcome, TrialState

from .helpers import (
    CONFIG_YAML,
    LiveServer,
    bearer,
    create_experiment,
    create_trial,
    experiment_body,
)


def test_create_from_yaml_and_read_back(client: httpx.Client) -> None:
    created = create_experiment(client)
    assert created["state"] == "ACTIVE" and created["owner"] == "admin"
    assert created["name"] == "mnist" and created["searcher_metric"] == "val_loss"
    assert created["config"]["searcher"]["name"] == "single"
    assert created["config"]["hyperparameters"]["lr"] == {"type": "const", "val": 0.1}
    assert created.pop("warnings") == []  # only the create answer has warnings
    got = client.get(f"/experiments/{created['id']}")
    assert got.status_code == 200
    read = got.json()
    # Only the read counts the trials (the single searcher's one may exist by then).
    assert created.pop("trial_counts") is None
    counts = read.pop("trial_counts")
    # And the config as submitted (tests/master/test_api_original_config.py).
    assert created.pop("original_config") is None
    assert read.pop("original_config") == CONFIG_YAML
    assert set(counts) <= {"ACTIVE"} and sum(counts.values()) <= 1, counts
    assert read == created


def test_create_from_json_object_paused(client: httpx.Client) -> None:
    config = {
        "searcher": {
            "name": "single",
            "metric": "acc",
            "smaller_is_better": False,
            "max_length": {"batches": 10},
        },
        "hyperparameters": {},
        "entrypoint": "model_def:MyTrial",
    }
    created = create_experiment(client, config=config, activate=False)
    assert created["state"] == "PAUSED" and created["smaller_is_better"] is False


def test_model_definition_round_trip(client: httpx.Client) -> None:
    body = experiment_body()
    created = client.post("/experiments", json=body).json()
    response = client.get(f"/experiments/{created['id']}/model_definition")
    assert response.status_code == 200
    assert response.headers["content-type"] == "application/gzip"
    assert response.content == base64.b64decode(body["model_definition"])
    with tarfile.open(fileobj=io.BytesIO(response.content), mode="r:gz") as archive:
        assert archive.getnames() == ["model_def.py"]


def test_config_errors_list_every_issue(client: httpx.Client) -> None:
    bad = "searcher:\n  name: randon\nmax_restarts: lots\nrecords_per_epohc: 5\n"
    response = client.post("/experiments", json=experiment_body(config=bad))
    assert response.status_code == 422
    error = response.json()["error"]
    fields = {issue["field"]: issue for issue in error["issues"]}
    assert "config.searcher.name" in fields and fields["config.searcher.name"]["line"] == 2
    assert "config.max_restarts" in fields and fields["config.max_restarts"]["line"] == 3
    assert any("records_per_epohc" in issue["field"] for issue in error["issues"])
    assert error["field"] == error["issues"][0]["field"]
    assert "invalid experiment config" in error["message"]
    assert client.get("/experiments").json()["total"] == 0


def test_list_filters_and_pages(client: httpx.Client) -> None:
    ids = [create_experiment(client)["id"] for _ in range(3)]
    paused = create_experiment(client, activate=False)["id"]
    page = client.get("/experiments", params={"limit": 2, "offset": 1}).json()
    assert page["total"] == 4 and page["limit"] == 2 and page["offset"] == 1
    assert [e["id"] for e in page["items"]] == sorted([*ids, paused], reverse=True)[1:3]
    only_paused = client.get("/experiments", params={"state": "PAUSED"}).json()
    assert [e["id"] for e in only_paused["items"]] == [paused]
    both = client.get("/experiments", params=[("state", "PAUSED"), ("state", "ACTIVE")]).json()
    assert both["total"] == 4


def test_state_actions(client: httpx.Client, database: Database) -> None:
    experiment_id = create_experiment(client)["id"]

    def act(action: str) -> httpx.Response:
        return client.post(f"/experiments/{experiment_id}/{action}")

    assert act("pause").json()["state"] == "PAUSED"
    assert act("pause").json()["state"] == "PAUSED"  # idempotent
    assert act("activate").json()["state"] == "ACTIVE"
    assert act("cancel").json()["state"] == "STOPPING_CANCELED"
    refused = act("activate")
    assert refused.status_code == 409
    assert refused.json()["error"] == {
        "message": f"cannot activate experiment {experiment_id}: it is STOPPING_CANCELED",
        "field": "state",
        "issues": [],
    }
    assert act("kill").json()["state"] == "STOPPING_KILLED"
    assert act("cancel").json()["state"] == "STOPPING_KILLED"  # kill wins
    with database.session(write=True) as session:
        experiments_repo.set_experiment_state(session, experiment_id, ExperimentState.CANCELED)
    for action in ("pause", "activate", "cancel", "kill"):
        response = act(action)
        assert response.status_code == 409
        assert "already ended (CANCELED)" in response.json()["error"]["message"]
    assert client.post("/experiments/424242/pause").status_code == 404


def test_delete_only_when_ended(client: httpx.Client, database: Database) -> None:
    experiment_id = create_experiment(client)["id"]
    create_trial(database, experiment_id)
    refused = client.delete(f"/experiments/{experiment_id}")
    assert refused.status_code == 409 and "cancel or kill" in refused.json()["error"]["message"]
    client.post(f"/experiments/{experiment_id}/kill")
    with database.session(write=True) as session:
        experiments_repo.set_experiment_state(session, experiment_id, ExperimentState.CANCELED)
    assert client.delete(f"/experiments/{experiment_id}").status_code == 204
    assert client.get(f"/experiments/{experiment_id}").status_code == 404
    assert client.get(f"/experiments/{experiment_id}/trials").status_code == 404


def test_trials_and_checkpoints_of_an_experiment(client: httpx.Client, database: Database) -> None:
    experiment_id = create_experiment(client)["id"]
    trial_ids = [create_trial(database, experiment_id, seed=s)[0] for s in range(3)]
    page = client.get(f"/experiments/{experiment_id}/trials", params={"limit": 2}).json()
    assert page["total"] == 3 and [t["id"] for t in page["items"]] == trial_ids[:2]
    assert page["items"][0]["hparams"] == {"lr": 0.1} and page["items"][0]["state"] == "ACTIVE"
    assert "token" not in str(page)

    ckpt = str(uuid.uuid4())
    with database.session(write=True) as session:
        checkpoints_repo.register_checkpoint(
            session, trial_ids[1], uuid=ckpt, total_batches=50, metadata={}, resources={"w": 10}
        )
    listed = client.get(f"/experiments/{experiment_id}/checkpoints").json()
    assert listed["total"] == 1
    assert listed["items"][0]["uuid"] == ckpt and listed["items"][0]["trial_id"] == trial_ids[1]
    assert client.get("/experiments/31337/checkpoints").status_code == 404


@pytest.mark.parametrize("action", ["pause", "activate", "cancel", "kill"])
def test_actions_need_a_user_not_a_trial(
    client: httpx.Client, database: Database, action: str
) -> None:
    # User-facing routes take a user's session token: a trial's token is not one.
    experiment_id = create_experiment(client)["id"]
    _trial_id, trial_token = create_trial(database, experiment_id)
    for token in (trial_token, "x"):
        response = client.post(f"/experiments/{experiment_id}/{action}", headers=bearer(token))
        assert response.status_code == 401, response.text
    assert client.post(f"/experiments/{experiment_id}/{action}").status_code == 200


def test_config_is_stored_as_submitted(client: httpx.Client, database: Database) -> None:
    experiment_id = create_experiment(client)["id"]
    with database.session() as session:
        assert experiments_repo.get_experiment(session, experiment_id).config_text == CONFIG_YAML


def test_create_refuses_a_searcher_pedl_cannot_run(client: httpx.Client) -> None:
    config = "name: x\nsearcher: {name: adaptive_simple, metric: m, max_trials: 4}\n"
    response = client.post("/experiments", json=experiment_body(config=config))
    assert response.status_code == 422
    error = response.json()["error"]
    assert error["field"] == "config.searcher.name"
    # Only the searcher's name is reported, not the fields that searcher would need.
    assert error["issues"] == [
        {
            "field": "config.searcher.name",
            "message": "Determined's removed 'adaptive_simple' searcher (now 'adaptive_asha') "
            "is not supported; use one of single, grid, random, adaptive_asha, async_halving, "
            "tpe, nsga2, gp, pbt, custom",
            "line": 2,
        }
    ]
    assert error["message"].startswith("invalid experiment config (1 problem): config.searcher")
    assert client.get("/experiments").json()["total"] == 0


@pytest.mark.skipif(
    missing_optuna_requirements("gp") is None, reason="torch and scipy are installed here"
)
def test_create_refuses_a_searcher_whose_dependencies_are_missing(client: httpx.Client) -> None:
    config = (
        "name: x\nhyperparameters: {x: {type: double, minval: 0, maxval: 1}}\n"
        "searcher: {name: gp, metric: m, max_trials: 4, max_length: {batches: 8}}\n"
    )
    response = client.post("/experiments", json=experiment_body(config=config))
    assert response.status_code == 422, response.text
    error = response.json()["error"]
    assert error["field"] == "config.searcher.name"
    assert "pip install torch scipy" in error["message"]
    assert client.get("/experiments").json()["total"] == 0


def test_create_refuses_an_impossible_batch_size_and_grid(client: httpx.Client) -> None:
    config = CONFIG_YAML.replace("  lr: 0.1\n", "  lr: 0.1\n  global_batch_size: 8.5\n")
    response = client.post("/experiments", json=experiment_body(config=config))
    assert response.status_code == 422
    issue = response.json()["error"]["issues"][0]
    assert issue == {
        "field": "config.hyperparameters.global_batch_size",
        "message": "must be a positive integer, got 8.5",
        "line": 5,
    }
    grid = {
        "searcher": {"name": "grid", "metric": "m", "max_length": {"batches": 1}},
        "hyperparameters": {
            "a": {"type": "double", "minval": 0, "maxval": 1, "count": 1000},
            "b": {"type": "double", "minval": 0, "maxval": 1, "count": 1000},
        },
    }
    response = client.post("/experiments", json=experiment_body(config=grid))
    assert response.status_code == 422
    issue = response.json()["error"]["issues"][0]
    assert issue["field"] == "config.hyperparameters" and issue["line"] is None
    assert "the grid has 1,000,000 points" in issue["message"]


def test_create_warns_once_about_ignored_determined_fields(client: httpx.Client) -> None:
    config = CONFIG_YAML + (
        "workspace: Uncategorized\n"
        "project: Uncategorized\n"
        "bind_mounts: [{host_path: /data, container_path: /data}]\n"
        "environment: {image: determinedai/environments:py-3.11, environment_variables: [A=1]}\n"
        "resources: {resource_pool: default}\n"
        "profiling: {enabled: true}\n"
    )
    created = create_experiment(client, config=config)
    assert created["warnings"] == [
        "these config fields are accepted for compatibility with Determined and ignored by "
        "PEDL: bind_mounts, environment.image, profiling, resources.resource_pool"
    ]
    assert "warnings" not in client.get(f"/experiments/{created['id']}").json()
    assert create_experiment(client)["warnings"] == []


def test_sdk_surfaces_the_warning_and_the_refusal(
    live_server: LiveServer, client: httpx.Client, tmp_path: Path
) -> None:
    (tmp_path / "model_def.py").write_text("class MyTrial:\n    pass\n")
    config = CONFIG_YAML + "bind_mounts: [{host_path: /a, container_path: /a}]\n"
    expected = (
        "these config fields are accepted for compatibility with Determined and ignored by "
        "PEDL: bind_mounts"
    )
    with Client(live_server.url) as sdk:
        with pytest.warns(ConfigWarning) as caught:
            experiment = sdk.create_experiment(config, tmp_path)
        assert [str(w.message) for w in caught] == [expected]
        assert experiment.to_dict()["warnings"] == [expected]
        with warnings.catch_warnings():
            warnings.simplefilter("error")
            sdk.create_experiment(CONFIG_YAML, tmp_path)  # a clean config: no warning
        removed = CONFIG_YAML.replace("name: single", "name: sync_halving")
        with pytest.raises(PEDLError) as info:
            sdk.create_experiment(removed, tmp_path)
        assert info.value.field == "config.searcher.name"
        assert "Determined's removed 'sync_halving' searcher" in str(info.value)


def test_the_lean_trials_page_has_the_public_shape(
    client: httpx.Client, database: Database
) -> None:
    """GET /experiments/{id}/trials builds its JSON from plain rows, not ORM objects or
    TrialPublic models: the same document Page[TrialPublic] gives for the ORM rows, every field
    set or not (timestamps in the same text), with paging and the state filter."""
    experiment_id = create_experiment(client)["id"]
    plain = create_trial(database, experiment_id, seed=1)[0]
    full = create_trial(database, experiment_id, seed=2, request_id="r-2", hparams={"x": 1e-5})[0]
    create_trial(database, experiment_id, seed=3)
    with database.session(write=True) as session:
        trial = trials_repo.set_trial_state(session, full, TrialState.ERROR)
        trial.outcome = TrialOutcome.ERRORED
        trial.error = {"type": "ValueError", "message": "bad"}  # the other fields defaulted
        trial.best_validation = 0.125
        trial.latest_checkpoint_uuid = trial.best_checkpoint_uuid = str(uuid.uuid4())
        trial.restarts, trial.total_batches = 2, 300

    def expected(**params: Any) -> dict[str, Any]:
        with database.session() as session:
            rows, total = trials_repo.list_trials(session, experiment_id, **params)
            page = Page[TrialListItem](
                items=[TrialListItem.model_validate(row) for row in rows],
                total=total,
                offset=params.get("offset", 0),
                limit=params.get("limit", 100),
            )
        return page.model_dump(mode="json")

    got = client.get(f"/experiments/{experiment_id}/trials")
    assert got.status_code == 200 and got.headers["content-type"] == "application/json"
    assert got.json() == expected()
    assert tuple(TrialPublic.model_fields) == TRIAL_PUBLIC_FIELDS  # the lean path's fields
    errored = got.json()["items"][1]
    assert errored["id"] == full and errored["error"]["traceback"] == ""
    assert errored["ended_at"] is not None and errored["hparams"] == {"x": 1e-5}
    assert got.json()["items"][0]["id"] == plain and "token" not in got.text
    paged = client.get(f"/experiments/{experiment_id}/trials", params={"limit": 1, "offset": 1})
    assert paged.json() == expected(limit=1, offset=1)
    live = client.get(f"/experiments/{experiment_id}/trials", params={"state": ["ACTIVE"]})
    assert live.json() == expected(states=[TrialState.ACTIVE]) and live.json()["total"] == 2
    assert client.get("/experiments/424242/trials").status_code == 404
    assert client.get(f"/experiments/{experiment_id}/trials?limit=0").status_code == 422


def test_best_validation_and_checkpoints_best_first(
    live_server: LiveServer, client: httpx.Client, database: Database
) -> None:
    experiment_id = create_experiment(client)["id"]  # val_loss, smaller is better
    assert client.get(f"/experiments/{experiment_id}").json()["best_validation"] is None
    values = {100: 0.5, 200: 0.2, 300: 0.9, 400: None}  # 400: checkpoint, no validation
    uuids = {}
    for seed, (batches, value) in enumerate(values.items()):
        trial_id, token = create_trial(database, experiment_id, seed=seed)
        if value is not None:
            row = {"kind": "validation", "total_batches": batches, "metrics": {"val_loss": value}}
            response = client.post(
                f"/trials/{trial_id}/metrics", json={"rows": [row]}, headers=bearer(token)
            )
            assert response.status_code == 200, response.text
        uuids[batches] = str(uuid.uuid4())
        with database.session(write=True) as session:
            checkpoints_repo.register_checkpoint(
                session, trial_id, uuid=uuids[batches], total_batches=batches,
                metadata={}, resources={"w": 1},
            )  # fmt: skip
    assert client.get(f"/experiments/{experiment_id}").json()["best_validation"] == 0.2
    listed = client.get("/experiments").json()["items"]
    assert [e["best_validation"] for e in listed if e["id"] == experiment_id] == [0.2]
    url = f"/experiments/{experiment_id}/checkpoints"
    best = client.get(url, params={"sort": "best", "state": "COMPLETED", "limit": 2}).json()
    assert [c["uuid"] for c in best["items"]] == [uuids[200], uuids[100]]
    assert best["total"] == 4
    everything = client.get(url, params={"sort": "best"}).json()["items"]
    assert [c["uuid"] for c in everything] == [uuids[b] for b in (200, 100, 300, 400)]
    oldest = client.get(url).json()["items"]
    assert [c["uuid"] for c in oldest] == [uuids[b] for b in (100, 200, 300, 400)]
    assert client.get(url, params={"sort": "worst"}).status_code == 422
    with Client(live_server.url) as sdk:
        experiment = sdk.get_experiment(experiment_id)
        assert experiment.best_validation == 0.2
        top = experiment.top_n_checkpoints(5)  # only those with the metric
        assert [c.uuid for c in top] == [uuids[200], uuids[100], uuids[300]]
        assert experiment.top_checkpoint().uuid == uuids[200]
