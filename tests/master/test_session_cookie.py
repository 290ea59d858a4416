"""The web UI's session cookie (issue 24, item 4), on a real master over HTTP, SQLite and
PostgreSQL: signing in sets an HttpOnly, SameSite=Strict session cookie (Secure behind
HTTPS) and a readable CSRF cookie, both expiring with the token; the cookie signs reads in;
a request that changes state with the cookie but without the CSRF header is refused (403)
before its body is read; a bearer token still needs no CSRF header; signing out revokes the
token and clears the cookies."""

from __future__ import annotations

import hashlib
import socket
from datetime import UTC, datetime
from http.cookies import SimpleCookie

import httpx

from pedl.db import Database
from pedl.master.api._session_cookie import (
    CSRF_COOKIE,
    CSRF_HEADER,
    SESSION_COOKIE,
    csrf_token,
)
from tests.waits import scaled

from .helpers import add_user, bearer, experiment_body

ALICE, PASSWORD = "alice", "correct horse battery"


def _set_cookies(response: httpx.Response) -> SimpleCookie:
    jar: SimpleCookie = SimpleCookie()
    for header in response.headers.get_list("set-cookie"):
        jar.load(header)
    return jar


def _login(http: httpx.Client, **headers: str) -> httpx.Response:
    answer = http.post(
        "/auth/login", json={"username": ALICE, "password": PASSWORD}, headers=headers
    )
    assert answer.status_code == 200, answer.text
    return answer


def test_sign_in_sets_the_session_and_csrf_cookies(
    client: httpx.Client, database: Database
) -> None:
    add_user(database, ALICE, PASSWORD)
    with httpx.Client(base_url=client.base_url, timeout=scaled(30)) as browser:
        answer = _login(browser)
        token = answer.json()["token"]
        lifetime = (
            datetime.fromisoformat(answer.json()["expires_at"]) - datetime.now(UTC)
        ).total_seconds()
        jar = _set_cookies(answer)
        session, csrf = jar[SESSION_COOKIE], jar[CSRF_COOKIE]
        assert session.value == token
        assert csrf.value == hashlib.sha256(b"pedl-csrf:" + token.encode()).hexdigest()
        assert token not in csrf.value
        for cookie in (session, csrf):
            assert cookie["samesite"] == "strict"
            assert cookie["path"] == "/"
            assert not cookie["secure"]  # plain HTTP: a Secure cookie would never come back
            assert abs(int(cookie["max-age"]) - lifetime) < 60  # expires with the token
            assert cookie["expires"]
        assert session["httponly"] and not csrf["httponly"]
        # Behind a proxy that speaks HTTPS to the browser: Secure as well.
        behind_tls = _set_cookies(_login(browser, **{"X-Forwarded-Proto": "https"}))
        assert behind_tls[SESSION_COOKIE]["secure"] and behind_tls[CSRF_COOKIE]["secure"]


def test_the_cookie_signs_in_and_writes_need_the_csrf_header(
    client: httpx.Client, database: Database
) -> None:
    add_user(database, ALICE, PASSWORD)
    with httpx.Client(base_url=client.base_url, timeout=scaled(30)) as browser:
        _login(browser)  # the client keeps the cookies, as a browser does
        csrf = browser.cookies[CSRF_COOKIE]
        assert browser.get("/me").json()["username"] == ALICE
        # A cross-site form's POST: the cookie, no CSRF header.
        forged = browser.post(
            "/experiments",
            data={"config": "x"},
            headers={"Origin": "https://elsewhere.example"},
        )
        assert forged.status_code == 403, forged.text
        error = forged.json()["error"]
        assert error["field"] == CSRF_HEADER and CSRF_HEADER in error["message"]
        wrong = browser.post("/experiments", json=experiment_body(), headers={CSRF_HEADER: "0"})
        assert wrong.status_code == 403
        created = browser.post("/experiments", json=experiment_body(), headers={CSRF_HEADER: csrf})
        assert created.status_code == 201, created.text
        assert created.json()["owner"] == ALICE
        experiment = created.json()["id"]
        for method, path in (
            ("POST", f"/experiments/{experiment}/kill"),
            ("PATCH", f"/experiments/{experiment}"),
            ("DELETE", f"/experiments/{experiment}"),
        ):
            assert browser.request(method, path, json={}).status_code == 403, (method, path)
        # The CLI and the SDK: a bearer token needs no CSRF header, and wins over a cookie.
        admin = client.get("/me").json()["username"]
        with_both = browser.get("/me", headers={"Authorization": client.headers["Authorization"]})
        assert with_both.json()["username"] == admin
        patched = client.patch(f"/experiments/{experiment}", json={"description": "CLI"})
        assert patched.status_code == 200, patched.text


def test_a_cookie_write_without_csrf_is_refused_before_its_body(
    client: httpx.Client, database: Database
) -> None:
    add_user(database, ALICE, PASSWORD)
    with httpx.Client(base_url=client.base_url, timeout=scaled(30)) as browser:
        token = _login(browser).json()["token"]
    port = client.base_url.port
    assert port is not None
    forged = "pedl-user.forged"
    for cookies, status in (
        (f"{SESSION_COOKIE}={token}", b"403"),  # no CSRF header
        # A forged session with its own matching CSRF header: the caller's 401, also first.
        (f"{SESSION_COOKIE}={forged}\r\n{CSRF_HEADER}: {csrf_token(forged)}", b"401"),
    ):
        # 125 MiB announced, none sent: the answer comes without the master waiting for it.
        head = (
            "POST /api/v1/experiments HTTP/1.1\r\nHost: 127.0.0.1\r\n"
            f"Content-Length: {125 << 20}\r\nContent-Type: application/json\r\n"
            f"Cookie: {cookies}\r\n\r\n"
        )
        with socket.create_connection(("127.0.0.1", port), timeout=scaled(30)) as sock:
            sock.sendall(head.encode())
            answer = b""
            while b"\r\n\r\n" not in answer:
                data = sock.recv(65536)
                if not data:
                    break
                answer += data
        assert answer.startswith(b"HTTP/1.1 " + status), answer[:200]


def test_sign_out_revokes_the_token_and_clears_the_cookies(
    client: httpx.Client, database: Database
) -> None:
    add_user(database, ALICE, PASSWORD)
    with httpx.Client(base_url=client.base_url, timeout=scaled(30)) as browser:
        token = _login(browser).json()["token"]
        csrf = browser.cookies[CSRF_COOKIE]
        assert browser.post("/auth/logout").status_code == 403  # no CSRF header
        assert browser.get("/me").status_code == 200
        out = browser.post("/auth/logout", headers={CSRF_HEADER: csrf})
        assert out.status_code == 204
        cleared = _set_cookies(out)
        for name in (SESSION_COOKIE, CSRF_COOKIE):
            assert cleared[name].value == "" and cleared[name]["max-age"] == "0", name
        assert SESSION_COOKIE not in browser.cookies
    # The token itself is revoked: the cookie kept by a browser that ignored the clearing,
    # and the same token as a bearer, are refused.
    with httpx.Client(base_url=client.base_url, timeout=scaled(30)) as stale:
        stale.cookies.set(SESSION_COOKIE, token)
        assert stale.get("/me").status_code == 401
        assert stale.get("/me", headers=bearer(token)).status_code == 401
