"""A TensorBoard answers the master only, and the master checks its callers first (issue 36,
item 6), on a real master process over HTTP with a real TensorBoard, on SQLite and
PostgreSQL:

- the TensorBoard's own loopback port answers 403 to anyone without the key the master's
  proxy adds (another local user, a trial), with or without a made-up one; through the
  master it serves;
- a request that changes state signed in by a cookie alone (the web UI's session cookie, or
  the ``pedl_tensorboard`` cookie) needs a CSRF header under ``/tensorboard/`` too:
  ``X-PEDL-CSRF``, or the header TensorBoard's own pages send with their POSTs; a bearer
  token needs none;
- a forged, or revoked, session cookie gets 401 (not the CSRF 403), on the API and under
  ``/tensorboard/``;
- a caller who is not signed in gets 401 for a body declared over the route's limit, before
  its size is looked at (413 only for a signed-in caller);
- what passes (issue 35): a caller that sent no ``Accept-Encoding`` (``curl``) reads plain
  JSON, one that asked for gzip gets gzip; one ``Server`` and one ``Date`` header; the fonts
  TensorBoard's page asks for at ``/font-roboto/`` come from TensorBoard, not the web UI's
  page, and ``/tensorboard/`` without an id is a 404."""

from __future__ import annotations

import contextlib
import gzip
import http.client
import json
import re
import time
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path

import httpx
import pytest

from tests.accounts import ADMIN, ADMIN_PASSWORD
from tests.master.conftest import BACKENDS, _create_pg_database, _drop_pg_database
from tests.master.e2e import MasterProcess, create_experiment, trials, wait_for
from tests.waits import scaled

pytestmark = pytest.mark.slow  # a master and a TensorBoard per database

MODEL_DIR = Path(__file__).parent / "tensorboard_model"
CONFIG = """
name: tensorboard-guard
entrypoint: python3 train.py --steps 3
hyperparameters: {}
searcher: {name: single, metric: score, smaller_is_better: false}
max_restarts: 0
"""
MiB = 1024 * 1024


@dataclass
class Board:
    master: MasterProcess
    id: str
    port: int
    """The TensorBoard process's own port, on loopback."""
    run: str
    cookie: str
    """The ``pedl_tensorboard`` cookie its start set."""

    @property
    def base(self) -> str:
        return f"/tensorboard/{self.id}"


@pytest.fixture(scope="module", params=BACKENDS)
def board(
    request: pytest.FixtureRequest, tmp_path_factory: pytest.TempPathFactory
) -> Iterator[Board]:
    env: dict[str, str] = {}
    name = None
    if request.param == "postgresql":
        name, env["PEDL_DB_URL"] = _create_pg_database()
    master = MasterProcess(tmp_path_factory.mktemp(f"guard-{request.param}"), env=env)
    try:
        master.start()
        experiment = create_experiment(master.http, CONFIG, MODEL_DIR)
        wait_for(master.http, experiment, {"COMPLETED"}, master=master)
        trial = trials(master.http, experiment)[0]["id"]
        started = master.http.post("/tensorboards", json={"experiment_ids": [experiment]})
        assert started.status_code == 201, started.text
        board_id = started.json()["id"]
        deadline = time.monotonic() + scaled(90)
        while master.http.get(f"/tensorboards/{board_id}").json()["state"] != "RUNNING":
            assert time.monotonic() < deadline, master.log()[-3000:]
            time.sleep(0.25)
        found = re.search(rf"TensorBoard {board_id} serves on 127\.0\.0\.1:(\d+)", master.log())
        assert found, master.log()[-3000:]
        yield Board(
            master,
            board_id,
            int(found[1]),
            f"experiment_{experiment}/trial_{trial}",
            started.cookies["pedl_tensorboard"],
        )
    finally:
        master.stop()
        if name is not None:
            _drop_pg_database(name)


@contextlib.contextmanager
def _browser(board: Board) -> Iterator[httpx.Client]:
    """A client signed in as the web UI is: the session and CSRF cookies only."""
    with httpx.Client(base_url=board.master.url, timeout=scaled(30)) as client:
        answer = client.post(
            "/api/v1/auth/login", json={"username": ADMIN, "password": ADMIN_PASSWORD}
        )
        assert answer.status_code == 200, answer.text
        assert client.cookies.get("pedl_session") and client.cookies.get("pedl_csrf")
        yield client


def test_the_tensorboard_port_answers_the_master_only(board: Board) -> None:
    direct = f"http://127.0.0.1:{board.port}{board.base}"
    for path in ("/", "/data/plugin/scalars/tags", "/data/runs", "/data/environment"):
        answer = httpx.get(direct + path, timeout=scaled(30))
        assert answer.status_code == 403, (path, answer.status_code, answer.text[:200])
        assert "answers its PEDL master only" in answer.text
    guessed = {"X-PEDL-TensorBoard-Key": "0" * 43}
    assert httpx.get(direct + "/data/runs", headers=guessed).status_code == 403
    refused = httpx.post(direct + "/data/plugin/scalars/scalars_multirun", data={"tag": "PEDL/x"})
    assert refused.status_code == 403
    # Through the master, signed in: served (the key is the master's to add).
    signed_in = httpx.Client(
        base_url=board.master.url, headers=dict(board.master.http.headers), timeout=scaled(30)
    )
    with signed_in:
        tags = signed_in.get(f"{board.base}/data/plugin/scalars/tags")
        assert tags.status_code == 200 and board.run in tags.json(), tags.text
        # A key the caller sends is not passed on (nor needed).
        assert signed_in.get(f"{board.base}/data/runs", headers=guessed).status_code == 200


def test_cookie_requests_that_change_state_need_a_csrf_header(board: Board) -> None:
    multirun = f"{board.base}/data/plugin/scalars/scalars_multirun"
    form = {"tag": "PEDL/x", "runs": board.run}
    with _browser(board) as browser:
        csrf = browser.cookies["pedl_csrf"]
        refused = browser.post(multirun, data=form)
        assert refused.status_code == 403, refused.text
        assert refused.json()["error"]["field"] == "X-PEDL-CSRF"
        wrong = browser.post(multirun, data=form, headers={"X-PEDL-CSRF": "0" * 64})
        assert wrong.status_code == 403
        for header in (
            {"X-PEDL-CSRF": csrf},
            {"X-XSRF-Protected": "1"},  # TensorBoard's own pages (its Angular client)
            {"X-TensorBoard-Feature-Flags": "{}"},  # ... and its Polymer request manager
        ):
            answer = browser.post(multirun, data=form, headers=header)
            assert answer.status_code == 200, (header, answer.text)
            assert [step for _, step, _ in answer.json()[board.run]] == [1, 2, 3]
        assert browser.get(f"{board.base}/data/runs").status_code == 200  # reads need none
        # The API's own rule, the same: a cookie-only kill of a TensorBoard is refused.
        kill = browser.post(f"/api/v1/tensorboards/{'0' * 32}/kill")
        assert kill.status_code == 403 and "X-PEDL-CSRF" in kill.text
    # The cookie of the start request (path /tensorboard/): the same rule.
    jar = {"pedl_tensorboard": board.cookie}
    url = board.master.url + multirun
    assert httpx.post(url, data=form, cookies=jar).status_code == 403
    assert (
        httpx.post(url, data=form, cookies=jar, headers={"X-XSRF-Protected": "1"}).status_code
        == 200
    )
    # A bearer token needs no CSRF header (the CLI, the SDK, scripts).
    assert board.master.http.post(board.master.url + multirun, data=form).status_code == 200


def test_a_forged_or_ended_session_cookie_is_401(board: Board) -> None:
    with _browser(board) as browser:
        ended = browser.cookies["pedl_session"]
        revoked = browser.post(
            "/api/v1/auth/logout", headers={"X-PEDL-CSRF": browser.cookies["pedl_csrf"]}
        )
        assert revoked.status_code in (200, 204), revoked.text
    writes = [
        ("POST", "/api/v1/experiments/1/kill"),
        ("PATCH", "/api/v1/experiments/1"),
        ("DELETE", "/api/v1/experiments/1"),
        ("POST", f"/api/v1/tensorboards/{board.id}/kill"),
        ("POST", f"{board.base}/data/plugin/scalars/scalars_multirun"),
    ]
    for token in ("pedl-user.forged", "not-even-a-token", ended):
        for cookie in ("pedl_session", "pedl_tensorboard"):
            for method, path in writes:
                if cookie == "pedl_tensorboard" and not path.startswith("/tensorboard/"):
                    continue  # that cookie is sent under /tensorboard/ only
                answer = httpx.request(
                    method, board.master.url + path, cookies={cookie: token}, timeout=scaled(30)
                )
                assert answer.status_code == 401, (token, cookie, method, path, answer.text)
                assert "sign" in answer.json()["error"]["message"]
    # A live session's cookie without the header still gets the CSRF 403.
    with _browser(board) as browser:
        assert browser.post("/api/v1/experiments/1/kill").status_code == 403


def _declare(board: Board, path: str, length: int, token: str | None = None) -> int:
    """POST ``path`` declaring ``Content-Length: length`` and sending no body: the status
    the master answers on the headers alone."""
    connection = http.client.HTTPConnection("127.0.0.1", board.master.port, timeout=scaled(30))
    try:
        connection.putrequest("POST", path)
        connection.putheader("Content-Type", "application/json")
        connection.putheader("Content-Length", str(length))
        if token is not None:
            connection.putheader("Authorization", f"Bearer {token}")
        connection.endheaders()
        answer = connection.getresponse()
        answer.read()
        return answer.status
    finally:
        connection.close()


def test_the_caller_is_checked_before_the_body_size(board: Board) -> None:
    token = board.master.http.headers["Authorization"].split(" ", 1)[1]
    over = [
        ("/api/v1/experiments", 200 * MiB),  # past max_upload_bytes (129 MiB)
        ("/api/v1/experiments/1/continue", 17 * MiB),  # past max_request_bytes (16 MiB)
        ("/api/v1/tensorboards", 17 * MiB),
        (f"{board.base}/data/plugin/scalars/scalars_multirun", 17 * MiB),
    ]
    for path, length in over:
        for anonymous in (None, "pedl-user.forged", "forged"):
            status = _declare(board, path, length, anonymous)
            assert status == 401, (path, anonymous, status)
        assert _declare(board, path, length, token) == 413, path  # signed in: its size
    # A trial's route: a trial token is asked for first (401 for a user's, or none).
    assert _declare(board, "/api/v1/trials/1/logs", 17 * MiB) == 401
    assert _declare(board, "/api/v1/trials/1/logs", 17 * MiB, token) == 401


def _get(
    board: Board, path: str, headers: dict[str, str]
) -> tuple[int, list[tuple[str, str]], bytes]:
    """GET ``path`` with exactly ``headers`` (no ``Accept-Encoding`` unless given, as
    ``curl`` sends): the status, the headers as sent, the body as sent (chunks joined)."""
    connection = http.client.HTTPConnection("127.0.0.1", board.master.port, timeout=scaled(30))
    try:
        connection.putrequest("GET", path, skip_accept_encoding=True)
        for name, value in headers.items():
            connection.putheader(name, value)
        connection.endheaders()
        answer = connection.getresponse()
        return answer.status, answer.getheaders(), answer.read()
    finally:
        connection.close()


def test_the_proxy_answers_as_the_caller_asked(board: Board) -> None:
    signed_in = {"Authorization": board.master.http.headers["Authorization"]}
    tags = f"{board.base}/data/plugin/scalars/tags"
    status, headers, body = _get(board, tags, signed_in)
    names = [name.lower() for name, _ in headers]
    assert status == 200, body[:200]
    assert "content-encoding" not in names, headers
    assert board.run in json.loads(body)  # plain JSON, as curl reads it
    assert names.count("server") == 1 and names.count("date") == 1, headers
    status, headers, body = _get(board, tags, {**signed_in, "Accept-Encoding": "gzip"})
    assert status == 200 and ("content-encoding", "gzip") in headers, headers
    assert board.run in json.loads(gzip.decompress(body))
    # The fonts TensorBoard's index.html names at the site's root.
    page = board.master.http.get(board.master.url + f"{board.base}/")
    font = re.search(r"url\((/font-roboto/[^)]+\.woff2)\)", page.text)
    assert font, page.text[:500]
    referer = f"{board.master.url}{board.base}/"
    status, headers, body = _get(board, font[1], {**signed_in, "Referer": referer})
    assert status == 200, body[:200]
    assert "html" not in dict((k.lower(), v) for k, v in headers)["content-type"], headers
    assert body[:4] == b"wOF2"
    for other in ({}, {"Referer": "http://[not-a-url"}):  # any running TensorBoard
        status, _, body = _get(board, font[1], {**signed_in, **other})
        assert status == 200 and body[:4] == b"wOF2", (other, status)
    assert _get(board, font[1], {})[0] == 401  # behind the sign-in, as TensorBoard is
    status, _, body = _get(board, "/tensorboard/", signed_in)
    assert status == 404 and b"<html" not in body.lower()
