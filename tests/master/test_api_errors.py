"""Bad requests get a 4xx in the one JSON error shape; every documented route answers."""

from __future__ import annotations

import base64
import uuid
from typing import Any

import httpx
import pytest

from pedl.db import Database
from pedl.db import checkpoints as checkpoints_repo

from .helpers import bearer, create_experiment, create_trial, experiment_body

EXPERIMENT_ID = "{experiment_id}"
TRIAL_ID = "{trial_id}"


def _metric_rows(**row: Any) -> dict[str, Any]:
    base: dict[str, Any] = {"kind": "training", "total_batches": 1, "metrics": {"loss": 1.0}}
    base.update(row)
    return {"rows": [base]}


def _checkpoint(**fields: Any) -> dict[str, Any]:
    base: dict[str, Any] = {"uuid": str(uuid.uuid4()), "total_batches": 1}
    base.update(fields)
    return base


# (method, path, request kwargs, expected status, expected error.field or None to skip)
BAD_REQUESTS: list[tuple[str, str, dict[str, Any], int, str | None]] = [
    ("POST", "/experiments", {}, 422, "body"),
    (
        "POST",
        "/experiments",
        {"content": b"{not json", "headers": {"content-type": "application/json"}},
        422,
        None,
    ),
    ("POST", "/experiments", {"json": [1, 2]}, 422, "body"),
    ("POST", "/experiments", {"json": {"config": "a: 1"}}, 422, "body.model_definition"),
    (
        "POST",
        "/experiments",
        {"json": experiment_body(model_definition="%%%")},
        422,
        "body.model_definition",
    ),
    (
        "POST",
        "/experiments",
        {"json": experiment_body(model_definition=base64.b64encode(b"plain").decode())},
        422,
        "body.model_definition",
    ),
    ("POST", "/experiments", {"json": experiment_body(config="- a\n- b\n")}, 422, None),
    ("POST", "/experiments", {"json": experiment_body(config="a: [1, 2\n")}, 422, None),
    ("POST", "/experiments", {"json": experiment_body(config="name: a\x00b\n")}, 422, None),
    ("POST", "/experiments", {"json": experiment_body(config={"name": "a\x00"})}, 422, None),
    ("POST", "/experiments", {"json": experiment_body(config=17)}, 422, None),
    ("POST", "/experiments", {"json": experiment_body(activate="maybe")}, 422, "body.activate"),
    ("POST", "/experiments", {"json": experiment_body(owner="eve")}, 422, "body.owner"),
    ("GET", "/experiments", {"params": {"limit": 0}}, 422, "query.limit"),
    ("GET", "/experiments", {"params": {"limit": "ten"}}, 422, "query.limit"),
    ("GET", "/experiments", {"params": {"offset": -1}}, 422, "query.offset"),
    ("GET", "/experiments", {"params": {"state": "RUNNING_AWAY"}}, 422, "query.state[0]"),
    ("GET", "/experiments/abc", {}, 422, "path.experiment_id"),
    ("GET", "/experiments/0", {}, 422, "path.experiment_id"),
    ("GET", "/experiments/99999999999999999999", {}, 422, "path.experiment_id"),
    ("GET", "/experiments/2147483647", {}, 404, None),
    ("GET", "/experiments/2147483647/model_definition", {}, 404, None),
    ("POST", "/experiments/2147483647/kill", {}, 404, None),
    ("DELETE", "/experiments/2147483647", {}, 404, None),
    ("POST", f"/experiments/{EXPERIMENT_ID}/explode", {}, 404, None),
    ("PUT", f"/experiments/{EXPERIMENT_ID}", {}, 405, None),
    ("GET", "/no/such/route", {}, 404, None),
    ("GET", "/checkpoints/not-a-uuid", {}, 422, "path.checkpoint_uuid"),
    ("GET", f"/trials/{TRIAL_ID}/metrics", {"params": {"kind": "testing"}}, 422, "query.kind"),
    (
        "GET",
        f"/trials/{TRIAL_ID}/metrics",
        {"params": {"after_batches": "x"}},
        422,
        "query.after_batches",
    ),
    ("GET", f"/trials/{TRIAL_ID}/logs", {"params": {"limit": 10**6}}, 422, "query.limit"),
    ("GET", "/trials/2147483647/logs", {}, 404, None),
    ("POST", f"/trials/{TRIAL_ID}/metrics", {"json": {}}, 422, "body.rows"),
    (
        "POST",
        f"/trials/{TRIAL_ID}/metrics",
        {"json": _metric_rows(kind="test")},
        422,
        "body.rows[0].kind",
    ),
    (
        "POST",
        f"/trials/{TRIAL_ID}/metrics",
        {"json": _metric_rows(total_batches=-1)},
        422,
        "body.rows[0].total_batches",
    ),
    (
        "POST",
        f"/trials/{TRIAL_ID}/metrics",
        {"json": _metric_rows(total_batches=2**63)},
        422,
        "body.rows[0].total_batches",
    ),
    (
        "POST",
        f"/trials/{TRIAL_ID}/metrics",
        {"json": _metric_rows(total_epochs=-0.5)},
        422,
        "body.rows[0].total_epochs",
    ),
    (
        "POST",
        f"/trials/{TRIAL_ID}/metrics",
        {"json": _metric_rows(metrics={"loss": "high"})},
        422,
        "body.rows[0].metrics.loss",
    ),
    ("POST", f"/trials/{TRIAL_ID}/metrics", {"json": _metric_rows(metrics={"": 1.0})}, 422, None),
    (
        "POST",
        f"/trials/{TRIAL_ID}/metrics",
        {"json": _metric_rows(metrics={"a\x00": 1.0})},
        422,
        None,
    ),
    (
        "POST",
        f"/trials/{TRIAL_ID}/metrics",
        {"json": _metric_rows(metrics=[1.0])},
        422,
        "body.rows[0].metrics",
    ),
    (
        "POST",
        f"/trials/{TRIAL_ID}/metrics",
        {"json": _metric_rows(reported_at="yesterday")},
        422,
        "body.rows[0].reported_at",
    ),
    (
        "POST",
        f"/trials/{TRIAL_ID}/metrics",
        {"json": _metric_rows(reported_at="0001-01-01T00:00:00+01:00")},
        422,
        "body.rows[0].reported_at",
    ),
    (
        "POST",
        f"/trials/{TRIAL_ID}/metrics",
        {"json": _metric_rows(extra=1)},
        422,
        "body.rows[0].extra",
    ),
    (
        "POST",
        f"/trials/{TRIAL_ID}/metrics",
        {"json": {"rows": [{"kind": "training", "total_batches": 1, "metrics": {}}] * 10_001}},
        422,
        "body.rows",
    ),
    (
        "POST",
        f"/trials/{TRIAL_ID}/logs",
        {"json": {"lines": [{"seq": -1, "message": "x"}]}},
        422,
        "body.lines[0].seq",
    ),
    (
        "POST",
        f"/trials/{TRIAL_ID}/logs",
        {"json": {"lines": [{"seq": 1}]}},
        422,
        "body.lines[0].message",
    ),
    (
        "POST",
        f"/trials/{TRIAL_ID}/logs",
        {"json": {"lines": [{"seq": 1, "message": "x", "level": "L" * 17}]}},
        422,
        "body.lines[0].level",
    ),
    (
        "POST",
        f"/trials/{TRIAL_ID}/checkpoints",
        {"json": _checkpoint(uuid="123")},
        422,
        "body.uuid",
    ),
    (
        "POST",
        f"/trials/{TRIAL_ID}/checkpoints",
        {"json": _checkpoint(resources={"../etc/passwd": 1})},
        422,
        None,
    ),
    (
        "POST",
        f"/trials/{TRIAL_ID}/checkpoints",
        {"json": _checkpoint(resources={"/abs": 1})},
        422,
        None,
    ),
    (
        "POST",
        f"/trials/{TRIAL_ID}/checkpoints",
        {"json": _checkpoint(resources={"a": -1})},
        422,
        "body.resources.a",
    ),
    (
        "POST",
        f"/trials/{TRIAL_ID}/checkpoints",
        {"json": _checkpoint(metadata={"k": "\x00"})},
        422,
        "body.metadata",
    ),
    (
        "POST",
        f"/trials/{TRIAL_ID}/checkpoints",
        {"json": _checkpoint(state="LOST")},
        422,
        "body.state",
    ),
]


def _assert_error_shape(response: httpx.Response) -> dict[str, Any]:
    assert response.headers["content-type"].startswith("application/json"), response.text
    body = response.json()
    assert set(body) == {"error"}
    error: dict[str, Any] = body["error"]
    assert set(error) == {"message", "field", "issues"}
    assert isinstance(error["message"], str) and error["message"]
    for issue in error["issues"]:
        assert set(issue) == {"field", "message", "line"}
    return error


@pytest.mark.parametrize(
    ("method", "path", "kwargs", "status", "field"),
    BAD_REQUESTS,
    ids=[f"{i}-{m} {p}" for i, (m, p, *_rest) in enumerate(BAD_REQUESTS)],
)
def test_bad_request_gets_4xx_json_error(
    client: httpx.Client,
    database: Database,
    method: str,
    path: str,
    kwargs: dict[str, Any],
    status: int,
    field: str | None,
) -> None:
    experiment_id = create_experiment(client)["id"]
    trial_id, token = create_trial(database, experiment_id)
    url = path.replace(EXPERIMENT_ID, str(experiment_id)).replace(TRIAL_ID, str(trial_id))
    trial_route = method == "POST" and url.startswith("/trials/")  # else the client's user's
    headers = {**(bearer(token) if trial_route else {}), **kwargs.pop("headers", {})}
    response = client.request(method, url, headers=headers, **kwargs)
    assert response.status_code == status, response.text
    error = _assert_error_shape(response)
    if field is not None:
        assert error["field"] == field
    if status == 422:
        assert error["issues"] and error["issues"][0]["field"] == error["field"]


def _fill(path: str, values: dict[str, str]) -> str:
    for name, value in values.items():
        path = path.replace("{" + name + "}", value)
    assert "{" not in path, f"unhandled path parameter in {path}"
    return path


def test_every_openapi_route_answers(client: httpx.Client, database: Database) -> None:
    experiment_id = create_experiment(client)["id"]
    trial_id, token = create_trial(database, experiment_id)
    checkpoint = str(uuid.uuid4())
    with database.session(write=True) as session:
        checkpoints_repo.register_checkpoint(
            session, trial_id, uuid=checkpoint, total_batches=1, metadata={}, resources={}
        )
    model = client.post("/models", json={"name": "some-model"})
    assert model.status_code == 201, model.text
    registered = client.post("/models/some-model/versions", json={"checkpoint_uuid": checkpoint})
    assert registered.status_code == 201, registered.text
    root = client.base_url.copy_with(path="/")
    spec = httpx.get(str(root.join("openapi.json"))).json()
    assert httpx.get(str(root.join("docs"))).status_code == 200
    routes = [(m.upper(), p) for p, item in spec["paths"].items() for m in item]
    # A trial's routes get its token, the others the client's user's (the scheme in the spec).
    trial_routes = {
        (m.upper(), p)
        for p, item in spec["paths"].items()
        for m, op in item.items()
        if any("TrialToken" in requirement for requirement in op.get("security", []))
    }
    assert len(routes) >= 18
    operation_ids = [op["operationId"] for item in spec["paths"].values() for op in item.values()]
    assert len(set(operation_ids)) == len(operation_ids)
    assert {"create_experiment", "report_metrics", "get_checkpoint"} <= set(operation_ids)
    assert "TrialToken" in spec["components"]["securitySchemes"]
    known = {
        "experiment_id": str(experiment_id),
        "trial_id": str(trial_id),
        "checkpoint_uuid": checkpoint,
        "username": "admin",
        "name": "some-template",
        "model": "some-model",
        "version": "1",
        "tensorboard_id": "0" * 32,
        "agent_id": "master",
        "slot_id": "0",
        "workspace_id": "1",
        "project_id": "1",
        "user_id": "1",
    }
    unknown = {
        "experiment_id": "2147483000",
        "trial_id": "2147483000",
        "checkpoint_uuid": str(uuid.uuid4()),
        "username": "nobody",
        "name": "no-such-template",
        "model": "no-such-model",
        "version": "2147483000",
        "tensorboard_id": "f" * 32,
        "agent_id": "no-such-agent",
        "slot_id": "2147483000",
        "workspace_id": "2147483000",
        "project_id": "2147483000",
        "user_id": "2147483000",
    }
    for method, path in routes:
        assert path.startswith("/api/v1/")
        if path == "/api/v1/auth/logout":
            continue  # would end the client's session (tests/master/test_auth.py has it)
        relative = path.removeprefix("/api/v1")
        for values in (known, unknown):
            for body in (None, {}, {"junk": [1, 2]}):
                headers = bearer(token) if (method, path) in trial_routes else {}
                response = client.request(
                    method, _fill(relative, values), json=body, headers=headers
                )
                assert response.status_code < 500, (method, path, body, response.text)
                if response.status_code >= 400:
                    _assert_error_shape(response)
    health = client.get("/health")
    assert health.json() == {"status": "ok"}
