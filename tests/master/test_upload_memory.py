"""The bodies the master holds at once are bounded (``max_upload_memory_bytes``, issue 25
item 2), and a model definition uploaded as ``multipart/form-data`` is spooled to a file and
checked from there (item 3); a ``--no-auth`` master asks no user token before a body, but
a trial's token still; on SQLite and PostgreSQL."""

from __future__ import annotations

import base64
import io
import json
import socket
import tarfile
import time
from collections.abc import Iterator
from pathlib import Path

import httpx
import pytest
from pydantic import ValidationError

from pedl.db import Database
from pedl.master import MasterSettings, create_app
from tests.waits import scaled

from .helpers import CONFIG_YAML, LiveServer, create_experiment, make_archive, sign_in

KiB = 1024
MiB = 1024 * KiB


@pytest.fixture
def small_master(
    backend_url: str, database: Database, tmp_path: Path
) -> Iterator[tuple[LiveServer, httpx.Client]]:
    """A master whose bodies may hold 6 MiB at once: uploads (4 MiB each at most) 5 MiB
    together, other requests 1 MiB each; and an HTTP client signed in as ``admin``."""
    settings = MasterSettings(
        home=tmp_path,
        db_url=backend_url,
        max_request_bytes=MiB,
        max_upload_bytes=4 * MiB,
        max_upload_memory_bytes=6 * MiB,
        retry_after_seconds=7,
    )
    headers = sign_in(database)
    with (
        LiveServer(create_app(settings)) as server,
        httpx.Client(base_url=server.url + "/api/v1", timeout=scaled(30), headers=headers) as http,
    ):
        yield server, http


def _held_upload(server: LiveServer, http: httpx.Client, length: int) -> socket.socket:
    """A multipart upload of ``length`` declared bytes whose body is never finished: it
    holds its bytes of the bound until the socket closes. Returns once the route reads its
    body (the master's ``100 Continue``), so past the memory check."""
    port = int(server.url.rsplit(":", 1)[1])
    head = [
        "POST /api/v1/experiments HTTP/1.1",
        "Host: 127.0.0.1",
        f"Content-Length: {length}",
        "Content-Type: multipart/form-data; boundary=b0undary",
        "Expect: 100-continue",
        f"Authorization: {http.headers['Authorization']}",
    ]
    sock = socket.create_connection(("127.0.0.1", port), timeout=scaled(30))
    sock.sendall(("\r\n".join(head) + "\r\n\r\n").encode())
    assert sock.recv(1024).startswith(b"HTTP/1.1 100 Continue")
    sock.sendall(b"--b0undary\r\n")
    return sock


def _refused_for_memory(response: httpx.Response) -> None:
    assert response.status_code == 503, response.text
    assert response.headers["retry-after"] == "7"
    error = response.json()["error"]
    assert "max_upload_memory_bytes" in error["message"]
    assert error["field"] == "body"


def test_bodies_over_the_memory_bound_are_refused_at_once(
    small_master: tuple[LiveServer, httpx.Client],
) -> None:
    server, http = small_master
    experiment_id = create_experiment(http)["id"]
    held = _held_upload(server, http, 4 * MiB)
    try:
        # Declared: 4 + 2 MiB would pass the 5 MiB uploads may hold: 503 before the body.
        started = time.monotonic()
        response = http.post(
            "/experiments",
            content=b"x" * (2 * MiB),
            headers={"Content-Type": "application/json"},
        )
        _refused_for_memory(response)
        assert time.monotonic() - started < 5
        # Streamed (chunked): refused as its bytes pass the bound.
        streamed = http.post(
            "/experiments",
            content=iter([b" " * (256 * KiB)] * 8),
            headers={"Content-Type": "application/json"},
        )
        _refused_for_memory(streamed)
        # A streamed multipart upload, which goes on to the route: refused as it passes.
        part = (
            b'--b\r\nContent-Disposition: form-data; name="model_definition"; '
            b'filename="m.tar.gz"\r\n\r\n'
        )
        streamed = http.post(
            "/experiments",
            content=iter([part] + [b"\0" * (256 * KiB)] * 8),
            headers={"Content-Type": "multipart/form-data; boundary=b"},
        )
        _refused_for_memory(streamed)
        # The last max_request_bytes stay for the other routes.
        patched = http.patch(f"/experiments/{experiment_id}", json={"description": "kept"})
        assert patched.status_code == 200, patched.text
    finally:
        held.close()
    # Released once the held request ends.
    deadline = time.monotonic() + scaled(10)
    while True:
        response = http.post("/experiments", json=_json_body(activate=False))
        if response.status_code != 503 or time.monotonic() > deadline:
            break
        time.sleep(0.1)
    assert response.status_code == 201, response.text


def _json_body(**extra: object) -> dict[str, object]:
    return {
        "config": CONFIG_YAML,
        "model_definition": base64.b64encode(make_archive()).decode(),
        **extra,
    }


def _upload(
    http: httpx.Client,
    archive: bytes,
    config: tuple[str, bytes, str] | None = None,
    **fields: str,
) -> httpx.Response:
    """``POST /experiments`` as multipart/form-data (the config as a YAML file part unless
    ``config`` says otherwise)."""
    files = {
        "model_definition": ("model.tar.gz", archive, "application/gzip"),
        "config": config or ("experiment.yaml", CONFIG_YAML.encode(), "application/yaml"),
    }
    return http.post("/experiments", files=files, data=fields)


def test_multipart_upload_is_stored_as_sent(
    small_master: tuple[LiveServer, httpx.Client],
) -> None:
    _server, http = small_master
    archive = make_archive({"model_def.py": b"class MyTrial:\n    pass\n", "data.bin": b"\1" * MiB})
    response = _upload(http, archive, activate="false")
    assert response.status_code == 201, response.text
    created = response.json()
    assert created["state"] == "PAUSED"
    stored = http.get(f"/experiments/{created['id']}/model_definition")
    assert stored.status_code == 200 and stored.content == archive
    # The config as a text field, and as a JSON object part.
    text = http.post(
        "/experiments",
        files={"model_definition": ("m.tar.gz", archive, "application/gzip")},
        data={"config": CONFIG_YAML},
    )
    assert text.status_code == 201, text.text
    document = {
        "entrypoint": "model_def:MyTrial",
        "hyperparameters": {"lr": 1e-05},
        "searcher": {"name": "single", "metric": "val_loss", "max_length": {"batches": 10}},
    }
    config = ("config.json", json.dumps(document).encode(), "application/json")
    as_json = _upload(http, archive, config)
    assert as_json.status_code == 201, as_json.text
    assert as_json.json()["config"]["hyperparameters"]["lr"]["val"] == 1e-05


def _problem(response: httpx.Response, status: int, field: str) -> str:
    assert response.status_code == status, response.text
    error = response.json()["error"]
    assert error["field"] == field, error
    message: str = error["message"]
    return message


def test_multipart_upload_is_checked_from_its_file(
    small_master: tuple[LiveServer, httpx.Client],
) -> None:
    _server, http = small_master
    buffer = io.BytesIO()
    with tarfile.open(fileobj=buffer, mode="w:gz") as tar:
        info = tarfile.TarInfo("../escape.py")
        tar.addfile(info, io.BytesIO(b""))
    unsafe = _upload(http, buffer.getvalue())
    assert "escape.py" in _problem(unsafe, 422, "body.model_definition")
    garbage = _upload(http, b"not an archive")
    assert "gzip" in _problem(garbage, 422, "body.model_definition")
    missing = http.post("/experiments", files={"config": ("c.yaml", CONFIG_YAML.encode())})
    _problem(missing, 422, "body.model_definition")
    text_part = http.post(  # (no file name: text fields)
        "/experiments", files={"config": (None, CONFIG_YAML), "model_definition": (None, "x")}
    )
    assert "file part" in _problem(text_part, 422, "body.model_definition")
    extra = _upload(http, make_archive(), colour="blue")
    _problem(extra, 422, "body.colour")
    bad_config = _upload(http, make_archive(), ("c.yaml", b"searcher: [", "application/yaml"))
    assert bad_config.status_code == 422
    assert bad_config.json()["error"]["field"].startswith("config")
    bad_activate = _upload(http, make_archive(), activate="perhaps")
    _problem(bad_activate, 422, "body.activate")
    # Over max_upload_bytes (4 MiB): 413 on its Content-Length, before the body.
    big = _upload(http, b"\0" * (5 * MiB))
    assert "max_upload_bytes" in _problem(big, 413, "body")
    # ... and streamed (chunked, no Content-Length): as its bytes pass it.
    part = b'--b\r\nContent-Disposition: form-data; name="model_definition"; filename="m"\r\n\r\n'
    streamed = http.post(
        "/experiments",
        content=iter([part] + [b"\0" * (256 * KiB)] * 20),
        headers={"Content-Type": "multipart/form-data; boundary=b"},
    )
    assert "max_upload_bytes" in _problem(streamed, 413, "body")


def test_the_memory_setting_holds_an_upload(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    assert MasterSettings(home=tmp_path).upload_memory_bytes == 256 * MiB
    big = MasterSettings(home=tmp_path, max_upload_bytes=300 * MiB)
    assert big.upload_memory_bytes == 316 * MiB  # + max_request_bytes (16 MiB)
    monkeypatch.setenv("PEDL_MAX_UPLOAD_MEMORY_BYTES", str(512 * MiB))
    assert MasterSettings(home=tmp_path).upload_memory_bytes == 512 * MiB
    with pytest.raises(ValidationError, match="max_upload_bytes \\+ max_request_bytes"):
        MasterSettings(home=tmp_path, max_upload_memory_bytes=100 * MiB)


def test_a_no_auth_master_asks_no_user_token(
    backend_url: str, database: Database, tmp_path: Path
) -> None:
    settings = MasterSettings(home=tmp_path, db_url=backend_url, auth=False)
    with (
        LiveServer(create_app(settings)) as server,
        httpx.Client(base_url=server.url + "/api/v1", timeout=scaled(30)) as anonymous,
    ):
        created = _upload(anonymous, make_archive(), activate="false")
        assert created.status_code == 201, created.text
        assert created.json()["owner"] == "admin"
        # A trial's route still wants that trial's token, before its body.
        trial = anonymous.post(
            "/trials/1/metrics", content=b"not json", headers={"Authorization": "Bearer x"}
        )
        assert trial.status_code == 401, trial.text
