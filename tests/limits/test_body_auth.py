"""The caller is checked before a byte of the body is read (issue 25, item 1), on a real master
process on SQLite and on PostgreSQL: anonymous and forged uploads of 125 MiB are answered 401
at once, without the master's memory growing, and a trial's routes refuse a forged token
before its body (401, not the body's 422)."""

from __future__ import annotations

import json
import select
import socket
import threading
import time
from pathlib import Path
from typing import Any

import httpx
import pytest

from tests.master.helpers import CONFIG_YAML, bearer, create_trial, experiment_body
from tests.waits import scaled

from .conftest import Master

pytestmark = pytest.mark.slow  # a master process per database

MiB = 1024 * 1024
UPLOAD = 125 * MiB
BODY_MEMORY_BOUND = 256 * MiB
"""The master's default ``max_upload_memory_bytes``."""


def _rss(master: Master) -> int:
    assert master.process.proc is not None
    status = Path(f"/proc/{master.process.proc.pid}/status").read_text()
    line = next(line for line in status.splitlines() if line.startswith("VmRSS:"))
    return int(line.split()[1]) * 1024


def _reset_peak_rss(master: Master) -> None:
    """Start the master process's VmHWM afresh (``/proc/<pid>/clear_refs``, value 5)."""
    assert master.process.proc is not None
    Path(f"/proc/{master.process.proc.pid}/clear_refs").write_text("5")


def _post(
    master: Master,
    path: str,
    length: int,
    token: str | None,
    *,
    stream: bool = True,
) -> tuple[bytes, float, int]:
    """POST ``path`` over a raw socket with ``Content-Length: length``; with ``stream``,
    its body streamed in 1 MiB chunks of one buffer (the test never holds it) until the
    master answers, else no body at all. Returns the answer's first bytes, the seconds from
    the end of the headers to the answer, and the body bytes sent by then."""
    port = int(master.process.url.rsplit(":", 1)[1])
    head = [f"POST /api/v1{path} HTTP/1.1", "Host: 127.0.0.1", f"Content-Length: {length}"]
    head += ["Content-Type: application/json"]
    head += [f"Authorization: Bearer {token}"] if token else []
    chunk = b" " * MiB
    sent = 0
    with socket.create_connection(("127.0.0.1", port), timeout=scaled(60)) as sock:
        sock.sendall(("\r\n".join(head) + "\r\n\r\n").encode())
        started = time.monotonic()
        sock.settimeout(5)  # a master that answered and stopped reading leaves sendall waiting
        try:
            while stream and sent < length and not select.select([sock], [], [], 0)[0]:
                sock.sendall(chunk[: length - sent])
                sent += min(len(chunk), length - sent)
        except (BrokenPipeError, ConnectionResetError, TimeoutError):
            pass
        sock.settimeout(30)
        answer = b""
        while b"\r\n\r\n" not in answer:
            data = sock.recv(65536)
            if not data:
                break
            answer += data
        waited = time.monotonic() - started
        head_end = answer.find(b"\r\n\r\n") + 4
        size = int(_header(answer, b"content-length") or 0)
        while len(answer) < head_end + size:
            data = sock.recv(65536)
            if not data:
                break
            answer += data
    return answer, waited, sent


def _status(answer: bytes) -> int:
    return int(answer.split(b" ", 2)[1])


def _header(answer: bytes, name: bytes) -> bytes | None:
    for line in answer.split(b"\r\n\r\n", 1)[0].split(b"\r\n")[1:]:
        key, _, value = line.partition(b":")
        if key.strip().lower() == name:
            return value.strip()
    return None


def _error(answer: bytes) -> dict[str, Any]:
    error: dict[str, Any] = json.loads(answer.split(b"\r\n\r\n", 1)[1])["error"]
    return error


@pytest.mark.parametrize(
    "token", [None, "pedl-user.made-up", "made-up"], ids=["anonymous", "user", "trial"]
)
def test_anonymous_uploads_are_refused_before_their_bodies(
    master: Master, token: str | None
) -> None:
    _reset_peak_rss(master)
    before = _rss(master)
    answers: list[tuple[bytes, float, int]] = []

    def upload() -> None:
        answers.append(_post(master, "/experiments", UPLOAD, token))

    threads = [threading.Thread(target=upload) for _ in range(4)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join(timeout=scaled(120))
    assert len(answers) == 4
    for answer, waited, sent in answers:
        assert _status(answer) == 401, answer[:500]
        assert _header(answer, b"www-authenticate") == b"Bearer"
        assert _error(answer)["field"] == "Authorization"
        assert waited < 1.0, f"answered after {waited:.2f} s"
        assert sent < UPLOAD, "the master answered only once the whole body was sent"
    grown = master.peak_rss() - before
    assert grown < BODY_MEMORY_BOUND, f"the master's RSS grew by {grown / MiB:.0f} MiB"
    master.assert_well()


def test_an_upload_is_refused_before_any_byte_of_its_body(master: Master) -> None:
    answer, waited, _sent = _post(master, "/experiments", UPLOAD, None, stream=False)
    assert _status(answer) == 401
    assert _error(answer)["message"].startswith("not signed in; sign in: POST /api/v1/auth/login")
    assert waited < 5
    answer, _, _ = _post(master, "/experiments", UPLOAD, "pedl-user.made-up", stream=False)
    assert _status(answer) == 401
    assert "unknown, expired or revoked" in _error(answer)["message"]


def _trial(master: Master) -> tuple[int, str]:
    response = master.http.post("/experiments", json=experiment_body(CONFIG_YAML, activate=False))
    assert response.status_code == 201, response.text
    database = master.database()
    try:
        return create_trial(database, response.json()["id"])
    finally:
        database.dispose()


def test_a_forged_trial_token_is_refused_before_the_body(master: Master) -> None:
    trial_id, token = _trial(master)
    other_id, other_token = _trial(master)
    path = f"/trials/{trial_id}/metrics"
    # 16 MiB declared, none of it sent: the answer comes all the same.
    for forged, status in [("forged", 401), (other_token, 403), (None, 401)]:
        answer, waited, _ = _post(master, path, 16 * MiB, forged, stream=False)
        assert _status(answer) == status, answer[:500]
        assert waited < 5
    answer, _, _ = _post(master, f"/trials/{trial_id}/logs", 16 * MiB, "forged", stream=False)
    assert _status(answer) == 401
    user_token = master.http.headers["Authorization"].split(" ", 1)[1]
    answer, _, _ = _post(master, path, 16 * MiB, user_token, stream=False)
    assert _status(answer) == 401
    # A bad body with a bad token: the token's 401, not the body's 422.
    with httpx.Client(base_url=master.process.url + "/api/v1", timeout=scaled(30)) as anonymous:
        for body in (b'{"rows": "nope"}', b"not json"):
            response = anonymous.post(
                path, content=body, headers={**bearer("forged"), "Content-Type": "application/json"}
            )
            assert response.status_code == 401, response.text
            assert response.json()["error"]["message"] == "invalid trial token"
        # The trial's own token still reports (and gets the body's 422 for a bad body).
        row = {"kind": "training", "total_batches": 1, "metrics": {"loss": 0.5}}
        good = anonymous.post(path, json={"rows": [row]}, headers=bearer(token))
        assert good.status_code == 200, good.text
        bad = anonymous.post(path, json={"rows": "nope"}, headers=bearer(token))
        assert bad.status_code == 422, bad.text
        other = anonymous.post(
            f"/trials/{other_id}/metrics", json={"rows": [row]}, headers=bearer(other_token)
        )
        assert other.status_code == 200, other.text
    master.assert_well()
