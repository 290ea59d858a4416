"""Issue 10's hostile inputs, each sent to a real master on SQLite and on PostgreSQL: each is
refused with a 4xx whose message names the field or limit, the master process's peak memory
stays under 500 MB, and it keeps serving (health and a list answer after each)."""

from __future__ import annotations

import base64
import json
import select
import socket
import time
from typing import Any

import httpx
import pytest

from tests.master.helpers import CONFIG_YAML, bearer, create_trial, experiment_body
from tests.waits import scaled

from .conftest import Master, million_member_archive

pytestmark = pytest.mark.slow  # a master process per database


def _refused(response: httpx.Response, status: int, *fragments: str) -> dict[str, Any]:
    assert response.status_code == status, response.text
    error: dict[str, Any] = response.json()["error"]
    text = json.dumps(error)
    for fragment in fragments:
        assert fragment in text, text
    return error


def _create(master: Master, config: Any, **extra: Any) -> httpx.Response:
    return master.http.post("/experiments", json=experiment_body(config, activate=False, **extra))


def _paused_trial(master: Master) -> tuple[int, str]:
    response = _create(master, CONFIG_YAML)
    assert response.status_code == 201, response.text
    database = master.database()
    try:
        return create_trial(database, response.json()["id"])
    finally:
        database.dispose()


BILLION_LAUGHS = "".join(
    [CONFIG_YAML, "data:\n", '  a: &a ["lol","lol","lol","lol","lol","lol","lol","lol","lol"]\n']
    + [
        f"  {chr(98 + i)}: &{chr(98 + i)} [{', '.join(['*' + chr(97 + i)] * 9)}]\n"
        for i in range(8)
    ]
)


def test_billion_laughs_is_refused_while_composed(master: Master) -> None:
    assert len(BILLION_LAUGHS) < 1500
    error = _refused(_create(master, BILLION_LAUGHS), 422, "aliases expanded", "100,000")
    assert error["field"] == "config"
    master.assert_well()


def test_grid_of_a_trillion_points_names_its_hyperparameters(master: Master) -> None:
    config = CONFIG_YAML.replace("name: single", "name: grid").replace(
        "layers: {type: int, minval: 1, maxval: 4}",
        "layers: {type: int, minval: 1, maxval: 1000000, count: 1000000}\n"
        "  dropout: {type: double, minval: 0, maxval: 1, count: 1000000}",
    )
    started = time.monotonic()
    error = _refused(_create(master, config), 422, "1,000,000,000,000 points", "layers (1,000,000)")
    assert "dropout (1,000,000)" in error["message"]
    assert error["field"] == "config.hyperparameters"
    assert time.monotonic() - started < 10
    master.assert_well()


@pytest.mark.parametrize("value", ["0", "-5", "8.5", "1000000000000"])
def test_global_batch_size_out_of_bounds(master: Master, value: str) -> None:
    config = CONFIG_YAML.replace("lr: 0.1", f"lr: 0.1\n  global_batch_size: {value}")
    error = _refused(_create(master, config), 422, value)
    assert error["field"] == "config.hyperparameters.global_batch_size"
    master.assert_well()


def _stream(
    master: Master, path: str, total: int, *, declared: bool = False, auth: str | None = None
) -> tuple[int, int]:
    """POST ``total`` bytes to ``path`` over a raw socket (chunked, or with a Content-Length
    and no body at all when ``declared``), stopping as soon as an answer arrives; returns the
    status and how many body bytes were sent by then. ``auth``: the Authorization header
    (default: the master client's, the administrator's)."""
    port = int(master.process.url.rsplit(":", 1)[1])
    auth = auth or master.http.headers.get("Authorization")
    head = [f"POST /api/v1{path} HTTP/1.1", "Host: 127.0.0.1", "Content-Type: application/json"]
    head += [f"Authorization: {auth}"] if auth else []
    head += [f"Content-Length: {total}"] if declared else ["Transfer-Encoding: chunked"]
    chunk = b"[" * (1 << 20)
    framed = b"%x\r\n%s\r\n" % (len(chunk), chunk)
    sent = 0
    with socket.create_connection(("127.0.0.1", port), timeout=scaled(60)) as sock:
        sock.sendall(("\r\n".join(head) + "\r\n\r\n").encode())
        sock.settimeout(5)  # a master that answered and stopped reading leaves sendall waiting
        try:
            while not declared and sent < total and not select.select([sock], [], [], 0)[0]:
                sock.sendall(framed)
                sent += len(chunk)
        except (BrokenPipeError, ConnectionResetError, TimeoutError):
            pass
        sock.settimeout(60)
        answer = b""
        while b"\r\n" not in answer:
            data = sock.recv(65536)
            if not data:
                break
            answer += data
    return int(answer.split(b" ", 2)[1]), sent


def test_body_over_the_limit_is_refused_while_streaming(master: Master) -> None:
    total = 400 * 1024 * 1024
    status, sent = _stream(master, "/experiments", total)
    assert status == 413
    assert sent < 200 * 1024 * 1024, f"{sent} bytes were sent before the 413"
    trial_id, token = _paused_trial(master)  # the route checks its caller before the body
    status, sent = _stream(master, f"/trials/{trial_id}/logs", total, auth=f"Bearer {token}")
    assert status == 413
    assert sent < 64 * 1024 * 1024, f"{sent} bytes were sent before the 413"
    assert _stream(master, "/experiments", total, declared=True)[0] == 413
    response = master.http.post(  # the trial's own token: its caller passes, then its size
        f"/trials/{trial_id}/logs", content=b" " * (17 * 1024 * 1024), headers=bearer(token)
    )
    _refused(response, 413, "max_request_bytes", "16 MiB")
    master.assert_well()


def test_archive_of_a_million_files_is_refused_quickly(master: Master) -> None:
    archive = base64.b64encode(million_member_archive()).decode()
    started = time.monotonic()
    response = master.http.post(
        "/experiments", json={"config": CONFIG_YAML, "model_definition": archive}
    )
    error = _refused(response, 422, "limit of 10000 members")
    assert error["field"] == "body.model_definition"
    assert time.monotonic() - started < 30
    master.assert_well()


@pytest.mark.parametrize(
    ("path", "body"),
    [
        ("/experiments", '{"config": ' + '{"a": ' * 5000 + "1" + "}" * 5000 + "}"),
        ("/experiments", "[" * 100_000 + "]" * 100_000),
        ("/trials/1/metrics", '{"rows": [' + "[" * 3000 + "]" * 3000 + "]}"),
    ],
    ids=["config", "array", "metrics-fast-path"],
)
def test_deeply_nested_json_is_a_400(master: Master, path: str, body: str) -> None:
    headers = {"Content-Type": "application/json"}
    if path.startswith("/trials/"):  # a trial's route checks its token before the body
        trial_id, token = _paused_trial(master)
        path = path.replace("/trials/1/", f"/trials/{trial_id}/")
        headers.update(bearer(token))
    response = master.http.post(path, content=body, headers=headers)
    error = _refused(response, 400, "nested deeper than 64", "max_json_depth")
    assert error["field"] == "body"
    master.assert_well()


def test_lone_surrogates_are_a_400(master: Master) -> None:
    response = _create(master, CONFIG_YAML)
    assert response.status_code == 201, response.text
    experiment_id = response.json()["id"]
    raw = '{"description": "\\udcff"}'
    response = master.http.patch(
        f"/experiments/{experiment_id}",
        content=raw,
        headers={"Content-Type": "application/json"},
    )
    _refused(response, 400, "lone UTF-16 surrogate")
    escaped_in_yaml = CONFIG_YAML.replace("name: mnist", 'name: "\\udcff"')
    _refused(_create(master, escaped_in_yaml), 422, "surrogate")
    master.assert_well()


def test_nul_and_nan_are_treated_alike_on_both_databases(master: Master) -> None:
    _refused(_create(master, CONFIG_YAML.replace("name: mnist", 'name: "a\\0b"')), 422, "NUL")
    raw_nul = _refused(_create(master, CONFIG_YAML.replace("mnist", "mn\x00ist")), 422, "NUL")
    assert raw_nul["field"] == "body.config"
    _refused(_create(master, CONFIG_YAML.replace("lr: 0.1", "lr: .nan")), 422, "finite")
    config = {
        "searcher": {"name": "single", "metric": "loss", "max_length": {"batches": 1}},
        "hyperparameters": {"lr": float("nan")},
    }
    text = json.dumps({**experiment_body(config), "activate": False})
    assert '"lr": NaN' in text
    response = master.http.post(
        "/experiments", content=text, headers={"Content-Type": "application/json"}
    )
    assert response.status_code == 422, response.text
    _refused(master.http.get("/experiments", params={"name": "a\x00b"}), 400, "NUL")

    trial_id, token = _paused_trial(master)
    rows = [{"kind": "training", "total_batches": 1, "metrics": {"loss": "NaN", "acc": 0.5}}]
    response = master.http.post(
        f"/trials/{trial_id}/metrics", json={"rows": rows}, headers=bearer(token)
    )
    assert response.status_code == 200, response.text
    stored = master.http.get(f"/trials/{trial_id}/metrics").json()
    assert [row["metrics"] for row in stored] == [{"loss": "NaN", "acc": 0.5}]
    nul_name = [{"kind": "training", "total_batches": 2, "metrics": {"lo\x00ss": 1.0}}]
    response = master.http.post(
        f"/trials/{trial_id}/metrics", json={"rows": nul_name}, headers=bearer(token)
    )
    _refused(response, 422, "NUL")
    master.assert_well()


def test_log_line_and_metric_sizes_are_bounded(master: Master) -> None:
    trial_id, token = _paused_trial(master)
    long_line = [{"seq": 0, "message": "x" * (1024 * 1024 + 1)}]
    response = master.http.post(
        f"/trials/{trial_id}/logs", json={"lines": long_line}, headers=bearer(token)
    )
    _refused(response, 422, "lines[0].message")
    too_many = [{"seq": i, "message": "x"} for i in range(10_001)]
    response = master.http.post(
        f"/trials/{trial_id}/logs", json={"lines": too_many}, headers=bearer(token)
    )
    _refused(response, 422, "body.lines")
    long_name = [{"kind": "training", "total_batches": 1, "metrics": {"m" * 257: 1.0}}]
    response = master.http.post(
        f"/trials/{trial_id}/metrics", json={"rows": long_name}, headers=bearer(token)
    )
    _refused(response, 422, "body.rows[0].metrics")
    master.assert_well()


@pytest.mark.parametrize(
    ("storage", "field"),
    [
        ("{type: shared_fs, host_path: /etc}", "config.checkpoint_storage.host_path"),
        (
            "{type: shared_fs, host_path: /tmp, storage_path: ../etc}",
            "config.checkpoint_storage.storage_path",
        ),
        ("{type: directory, container_path: /root/elsewhere}", "checkpoint_storage.container_path"),
    ],
)
def test_storage_paths_outside_the_allowed_roots(master: Master, storage: str, field: str) -> None:
    config = CONFIG_YAML + f"checkpoint_storage: {storage}\n"
    error = _refused(_create(master, config), 422, "storage_roots")
    assert field in error["field"]
    inside = (
        CONFIG_YAML + f"checkpoint_storage: {{type: shared_fs, host_path: {master.process.home}}}\n"
    )
    assert _create(master, inside).status_code == 201
    master.assert_well()


@pytest.mark.parametrize(
    ("old", "new", "field"),
    [
        ("name: mnist", "name: " + "n" * 513, "config.name"),
        ("metric: val_loss", "metric: " + "m" * 257, "config.searcher.metric"),
        ("name: mnist", "name: mnist\nlabels: [" + ", ".join(["l"] * 101) + "]", "config.labels"),
    ],
    ids=["name", "metric", "labels"],
)
def test_texts_kept_in_columns_are_bounded_alike(
    master: Master, old: str, new: str, field: str
) -> None:
    error = _refused(_create(master, CONFIG_YAML.replace(old, new)), 422, "at most")
    assert error["field"] == field
    master.assert_well()
