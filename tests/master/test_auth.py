"""Users and tokens: every non-public route wants a signed-in user (or, for a trial's own
routes, that trial's token); owners and administrators alone change an experiment; expired,
revoked and deactivated sessions are refused; passwords are stored as argon2 hashes and
tokens as SHA-256 hashes only. On SQLite and PostgreSQL."""

from __future__ import annotations

import hashlib
import time
import uuid
from datetime import timedelta
from pathlib import Path

import httpx
import pytest
from sqlalchemy import select

from pedl.db import Database, User, UserSession
from pedl.db import checkpoints as checkpoints_repo
from pedl.db import experiments as experiments_repo
from pedl.master import MasterSettings, create_app
from pedl.master._reads import ReadProcesses
from pedl.master.api._auth import PUBLIC_PATHS
from pedl.master.api._session_cookie import SESSION_COOKIE
from pedl.vocabulary import ExperimentState
from tests.waits import scaled

from .helpers import (
    LiveServer,
    bearer,
    create_experiment,
    create_trial,
    experiment_body,
    sign_in,
)

ALICE, BOB = "alice", "bob"
PASSWORD = "correct horse battery"


def _paths(client: httpx.Client) -> list[tuple[str, str, bool]]:
    """Every route in the OpenAPI schema: (method, path, is one of a trial's own)."""
    spec = httpx.get(str(client.base_url.join("/openapi.json")), timeout=scaled(30))  # public
    assert spec.status_code == 200
    routes = []
    for path, item in spec.json()["paths"].items():
        for method, operation in item.items():
            schemes = {name for req in operation.get("security", []) for name in req}
            routes.append((method.upper(), path, "TrialToken" in schemes))
    return routes


def test_every_non_public_route_needs_a_token(client: httpx.Client, database: Database) -> None:
    experiment_id = create_experiment(client)["id"]
    trial_id, trial_token = create_trial(database, experiment_id)
    checkpoint = str(uuid.uuid4())
    with database.session(write=True) as session:
        checkpoints_repo.register_checkpoint(
            session, trial_id, uuid=checkpoint, total_batches=1, metadata={}, resources={}
        )
    values = {
        "{experiment_id}": str(experiment_id),
        "{trial_id}": str(trial_id),
        "{checkpoint_uuid}": checkpoint,
        "{username}": "admin",
        "{name}": "some-template",
        "{model}": "some-model",
        "{version}": "1",
        "{tensorboard_id}": "0" * 32,
        "{agent_id}": "master",
        "{slot_id}": "0",
        "{workspace_id}": "1",
        "{project_id}": "1",
        "{user_id}": "1",
    }
    routes = _paths(client)
    assert len(routes) >= 30
    root = str(client.base_url.copy_with(path="/"))
    with httpx.Client(base_url=root, timeout=scaled(30)) as anonymous:
        checked = _check_every_route(anonymous, routes, values, client, trial_token)
        assert checked >= 25
        for public in ("/api/v1/health", "/openapi.json", "/docs", "/"):
            assert anonymous.get(public).status_code == 200, public
        login = anonymous.post("/api/v1/auth/login", json={"username": "admin", "password": "x"})
        assert login.status_code == 401
        assert login.json()["error"]["message"] == "wrong username or password"


def _check_every_route(
    anonymous: httpx.Client,
    routes: list[tuple[str, str, bool]],
    values: dict[str, str],
    client: httpx.Client,
    trial_token: str,
) -> int:
    checked = 0
    for method, path, trial_route in routes:
        if path in PUBLIC_PATHS:
            continue
        for name, value in values.items():
            path = path.replace(name, value)
        assert "{" not in path, f"a path parameter this test does not know: {path}"
        # Every caller is checked before the body (a bad body with a forged token: 401).
        forged = [bearer("pedl-user.not-a-token"), bearer("nonsense")]
        for headers in [{}, *forged]:
            response = anonymous.request(method, path, headers=headers, json={})
            assert response.status_code == 401, (method, path, headers, response.text)
            assert response.headers["www-authenticate"] == "Bearer"
        # A trial's token is no user's, and a user's is no trial's.
        wrong = client.headers["Authorization"] if trial_route else f"Bearer {trial_token}"
        # (A trial reads its experiment's model definition.)
        if not path.endswith("/model_definition"):
            response = anonymous.request(method, path, headers={"Authorization": wrong}, json={})
            assert response.status_code == 401, (method, path, response.text)
        checked += 1
    return checked


def test_login_me_logout(client: httpx.Client, database: Database) -> None:
    sign_in(database, ALICE, PASSWORD, admin=False)
    with httpx.Client(base_url=client.base_url, timeout=scaled(30)) as anonymous:
        _login_me_logout(anonymous)


def _login_me_logout(anonymous: httpx.Client) -> None:
    answer = anonymous.post("/auth/login", json={"username": ALICE, "password": PASSWORD})
    assert answer.status_code == 200, answer.text
    token = answer.json()["token"]
    assert token.startswith("pedl-user.") and answer.json()["admin"] is False
    me = anonymous.get("/me", headers=bearer(token))
    assert me.status_code == 200 and me.json()["username"] == ALICE
    assert "password" not in me.text and "hash" not in me.text
    assert anonymous.post("/auth/logout", headers=bearer(token)).status_code == 204
    revoked = anonymous.get("/me", headers=bearer(token))
    assert revoked.status_code == 401
    assert "unknown, expired or revoked" in revoked.json()["error"]["message"]
    wrong = anonymous.post("/auth/login", json={"username": ALICE, "password": "nope nope"})
    nobody = anonymous.post("/auth/login", json={"username": "nobody", "password": "nope nope"})
    assert wrong.status_code == nobody.status_code == 401
    assert wrong.json() == nobody.json()


def test_expired_and_deactivated_sessions_are_refused(
    client: httpx.Client, database: Database
) -> None:
    expired = sign_in(database, ALICE, PASSWORD, admin=False, lifetime=timedelta(seconds=-1))
    assert client.get("/me", headers=expired).status_code == 401
    valid = sign_in(database, ALICE, PASSWORD, admin=False)
    assert client.get("/experiments", headers=valid).status_code == 200
    assert client.post(f"/users/{ALICE}/deactivate").status_code == 200
    assert client.get("/experiments", headers=valid).status_code == 401
    login = client.post("/auth/login", json={"username": ALICE, "password": PASSWORD})
    assert login.status_code == 401
    assert client.post(f"/users/{ALICE}/activate").status_code == 200
    login = client.post("/auth/login", json={"username": ALICE, "password": PASSWORD})
    assert login.status_code == 200
    # The last active administrator cannot lock everyone out.
    refused = client.post("/users/admin/deactivate")
    assert refused.status_code == 409 and "last active administrator" in refused.text


def test_owners_and_admins_change_experiments_others_only_read(
    client: httpx.Client, database: Database
) -> None:
    alice, bob = (sign_in(database, name, PASSWORD, admin=False) for name in (ALICE, BOB))
    created = client.post("/experiments", json=experiment_body(), headers=alice)
    assert created.status_code == 201 and created.json()["owner"] == ALICE
    experiment_id = created.json()["id"]
    trial_id, _token = create_trial(database, experiment_id)
    base = f"/experiments/{experiment_id}"
    # Anyone signed in reads.
    for path in (base, f"{base}/trials", f"{base}/checkpoints", f"/trials/{trial_id}"):
        assert client.get(path, headers=bob).status_code == 200, path
    assert client.get(f"{base}/model_definition", headers=bob).status_code == 200
    # Nobody else writes.
    writes = [
        ("POST", f"{base}/pause", None),
        ("POST", f"{base}/activate", None),
        ("POST", f"{base}/cancel", None),
        ("POST", f"{base}/kill", None),
        ("PATCH", base, {"description": "mine now"}),
        ("DELETE", base, None),
        ("POST", f"/trials/{trial_id}/kill", None),
    ]
    for method, path, body in writes:
        refused = client.request(method, path, json=body, headers=bob)
        assert refused.status_code == 403, (method, path, refused.text)
        assert f"belongs to '{ALICE}'" in refused.json()["error"]["message"]
    assert client.get(base, headers=bob).json()["state"] == "ACTIVE"
    # The owner and an administrator do.
    assert client.post(f"{base}/pause", headers=alice).json()["state"] == "PAUSED"
    assert client.patch(base, json={"labels": ["x"]}, headers=alice).status_code == 200
    assert client.post(f"{base}/activate").json()["state"] == "ACTIVE"  # admin
    with database.session(write=True) as session:
        for state in (ExperimentState.STOPPING_CANCELED, ExperimentState.CANCELED):
            experiments_repo.set_experiment_state(session, experiment_id, state)
    assert client.delete(base, headers=bob).status_code == 403
    assert client.delete(base, headers=alice).status_code == 204
    # Accounts are the administrators' business.
    assert client.get("/users", headers=bob).status_code == 403
    new_user = {"username": "carol", "password": PASSWORD}
    assert client.post("/users", json=new_user, headers=bob).status_code == 403
    assert client.post(f"/users/{ALICE}/deactivate", headers=bob).status_code == 403
    change = {"password": "a new password"}
    assert client.post(f"/users/{ALICE}/password", json=change, headers=bob).status_code == 403


def test_a_trial_token_works_for_its_own_trial_only(
    client: httpx.Client, database: Database
) -> None:
    first, second = (create_experiment(client)["id"] for _ in range(2))
    trial_a, token_a = create_trial(database, first)
    trial_b, _token_b = create_trial(database, second)
    with httpx.Client(base_url=client.base_url, timeout=scaled(30), headers=bearer(token_a)) as api:
        _only_its_own(api, first, second, trial_a, trial_b)


def _only_its_own(api: httpx.Client, first: int, second: int, trial_a: int, trial_b: int) -> None:
    assert api.get(f"/trials/{trial_a}/start").status_code == 200
    row = {"kind": "training", "total_batches": 1, "metrics": {"loss": 1.0}}
    for method, path, body in [
        ("GET", f"/trials/{trial_b}/start", None),
        ("POST", f"/trials/{trial_b}/metrics", {"rows": [row]}),
        ("POST", f"/trials/{trial_b}/logs", {"lines": [{"seq": 1, "message": "x"}]}),
        ("POST", f"/trials/{trial_b}/checkpoints", {"uuid": str(uuid.uuid4()), "total_batches": 1}),
        ("GET", f"/experiments/{second}/model_definition", None),
    ]:
        response = api.request(method, path, json=body)
        assert response.status_code == 403, (method, path, response.text)
    assert api.get(f"/experiments/{first}/model_definition").status_code == 200


def test_passwords_are_argon2_hashes_and_tokens_sha256(
    client: httpx.Client, database: Database
) -> None:
    created = client.post("/users", json={"username": "carol", "password": PASSWORD})
    assert created.status_code == 201, created.text
    assert created.json() == {**created.json(), "username": "carol", "admin": False}
    assert (
        client.post("/users", json={"username": "carol", "password": PASSWORD}).status_code == 409
    )
    short = client.post("/users", json={"username": "dave", "password": "short"})
    assert short.status_code == 422 and short.json()["error"]["field"] == "body.password"
    login = client.post("/auth/login", json={"username": "carol", "password": PASSWORD})
    token = login.json()["token"]
    with database.session() as session:
        user = session.scalars(select(User).where(User.username == "carol")).one()
        hashes = list(session.scalars(select(UserSession.token_hash)))
    assert user.password_hash.startswith("$argon2id$") and PASSWORD not in user.password_hash
    assert hashlib.sha256(token.encode()).hexdigest() in hashes
    assert all(token not in stored for stored in hashes)
    # Changing one's password needs the old one and ends the other sessions.
    carol = bearer(token)
    second = client.post("/auth/login", json={"username": "carol", "password": PASSWORD})
    other = bearer(second.json()["token"])
    change = {"password": "another password"}
    assert client.post("/users/carol/password", json=change, headers=carol).status_code == 422
    wrong = {**change, "old_password": "not it at all"}
    assert client.post("/users/carol/password", json=wrong, headers=carol).status_code == 403
    right = {**change, "old_password": PASSWORD}
    assert client.post("/users/carol/password", json=right, headers=carol).status_code == 204
    assert client.get("/me", headers=carol).status_code == 200
    assert client.get("/me", headers=other).status_code == 401
    relogin = {"username": "carol", "password": "another password"}
    assert client.post("/auth/login", json=relogin).status_code == 200


@pytest.mark.slow
def test_reads_forwarded_to_a_read_process_are_authenticated(
    backend_url: str, database: Database, tmp_path: Path
) -> None:
    # token_cache_seconds=0: the read process checks the token at every request.
    settings = MasterSettings(home=tmp_path / "home", db_url=backend_url, token_cache_seconds=0)
    app = create_app(settings, reads=ReadProcesses(settings, 1, check_interval_s=0.1))
    server = LiveServer(app)
    server.start()
    headers = sign_in(database)
    try:
        with httpx.Client(base_url=server.url + "/api/v1", timeout=scaled(60)) as http:
            experiment_id = int(
                http.post("/experiments", json=experiment_body(), headers=headers).json()["id"]
            )
            stats = app.state.read_forwarding
            deadline = time.monotonic() + scaled(60)
            while stats.forwarded == 0 and time.monotonic() < deadline:
                assert http.get("/experiments", headers=headers).status_code == 200
                time.sleep(0.05)
            assert stats.forwarded > 0, "the read process never answered"
            before = stats.forwarded
            path = f"/experiments/{experiment_id}"
            assert http.get(path).status_code == 401
            assert http.get(path, headers=bearer("pedl-user.forged")).status_code == 401
            assert http.get(path, headers=headers).status_code == 200
            # The web UI's session cookie: the same token, forwarded as its bearer token.
            token = headers["Authorization"].removeprefix("Bearer ")
            by_cookie = httpx.get(
                f"{server.url}/api/v1{path}", cookies={SESSION_COOKIE: token}, timeout=60
            )
            assert by_cookie.status_code == 200, by_cookie.text
            assert http.post("/auth/logout", headers=headers).status_code == 204
            assert http.get(path, headers=headers).status_code == 401
            assert stats.forwarded == before + 5  # every one of those reads, by the read process
    finally:
        server.stop()


@pytest.mark.slow
def test_a_revoked_token_is_refused_at_once_though_a_read_process_cached_it(
    backend_url: str, database: Database, tmp_path: Path
) -> None:
    # A long token cache: the read process trusts a token it checked for five minutes.
    settings = MasterSettings(home=tmp_path / "home", db_url=backend_url, token_cache_seconds=300)
    app = create_app(settings, reads=ReadProcesses(settings, 1, check_interval_s=0.1))
    server = LiveServer(app)
    server.start()
    admin, alice, bob = sign_in(database), sign_in(database, ALICE), sign_in(database, BOB)
    try:
        with httpx.Client(base_url=server.url + "/api/v1", timeout=scaled(60)) as http:
            stats = app.state.read_forwarding
            deadline = time.monotonic() + scaled(60)
            while stats.forwarded == 0 and time.monotonic() < deadline:
                assert http.get("/experiments", headers=admin).status_code == 200
                time.sleep(0.05)
            assert stats.forwarded > 0, "the read process never answered"

            def forwarded_read(headers: dict[str, str]) -> int:
                before = stats.forwarded
                status = http.get("/experiments", headers=headers).status_code
                assert stats.forwarded == before + 1, "not served by the read process"
                return status

            assert forwarded_read(alice) == 200 and forwarded_read(bob) == 200  # now cached
            assert http.post("/auth/logout", headers=alice).status_code == 204
            assert http.get("/experiments", headers=alice).status_code == 401
            assert forwarded_read(admin) == 200  # other tokens' reads are still forwarded
            assert http.post(f"/users/{BOB}/deactivate", headers=admin).status_code == 200
            assert http.get("/experiments", headers=bob).status_code == 401
    finally:
        server.stop()
