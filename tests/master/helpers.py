"""Helpers shared by the master's tests (fixtures are in conftest.py)."""

from __future__ import annotations

import base64
import contextlib
import functools
import io
import tarfile
import threading
import time
from collections.abc import Iterator
from datetime import timedelta
from pathlib import Path
from typing import Any

import httpx
import uvicorn

from pedl.db import Database, NotFoundError
from pedl.db import experiments as experiments_repo
from pedl.db import trials as trials_repo
from pedl.db import users as users_repo
from pedl.db import workspaces as workspaces_repo
from pedl.master import MasterSettings, create_app
from tests.accounts import ADMIN, ADMIN_PASSWORD
from tests.diagnostics import event_loop_tasks, thread_stacks
from tests.waits import scaled

CONFIG_YAML = """\
name: mnist
entrypoint: model_def:MyTrial
hyperparameters:
  lr: 0.1
  layers: {type: int, minval: 1, maxval: 4}
searcher:
  name: single
  metric: val_loss
  smaller_is_better: true
  max_length: {batches: 100}
"""


START_TIMEOUT_S = scaled(120.0)
"""How long an in-process master may take to start (migrations, orchestrator, read
processes): seconds on an idle machine, but a test worker beside trial processes importing
TensorFlow on two busy cores has been seen to need over 60 (:func:`~tests.waits.scaled`)."""


class LiveServer:
    """A real uvicorn server running an app on a loopback port (``port``, or a free one) in a
    background thread."""

    def __init__(self, app: Any, port: int = 0) -> None:
        config = uvicorn.Config(
            app, host="127.0.0.1", port=port, log_level="warning", lifespan="on"
        )
        self.server = uvicorn.Server(config)
        self.thread = threading.Thread(target=self.server.run, name="pedl-test-master", daemon=True)
        self.url = ""

    def start(self) -> None:
        self.thread.start()
        deadline = time.monotonic() + START_TIMEOUT_S
        while not self.server.started:
            if not self.thread.is_alive():
                raise RuntimeError("the test master did not start: its thread ended")
            if time.monotonic() > deadline:
                raise RuntimeError(
                    f"the test master did not start in {START_TIMEOUT_S:.0f} s\n"
                    f"{thread_stacks()}\n{event_loop_tasks()}"
                )
            time.sleep(0.01)
        port = self.server.servers[0].sockets[0].getsockname()[1]
        self.url = f"http://127.0.0.1:{port}"

    def stop(self) -> None:
        self.server.should_exit = True
        self.thread.join(timeout=scaled(20))

    def __enter__(self) -> LiveServer:
        self.start()
        return self

    def __exit__(self, *_exc: object) -> None:
        self.stop()


@contextlib.contextmanager
def served_master(settings: MasterSettings) -> Iterator[tuple[LiveServer, Database]]:
    """The master's app on ``settings`` served over HTTP, and a :class:`Database` on its
    database for the test's own reads and writes; both closed afterwards."""
    with LiveServer(create_app(settings)) as server:
        database = Database(settings.db_url)
        try:
            yield server, database
        finally:
            database.dispose()


def make_archive(files: dict[str, bytes] | None = None) -> bytes:
    """A small model definition as .tar.gz bytes."""
    files = files or {"model_def.py": b"class MyTrial:\n    pass\n"}
    buffer = io.BytesIO()
    with tarfile.open(fileobj=buffer, mode="w:gz") as archive:
        for name, data in files.items():
            info = tarfile.TarInfo(name)
            info.size = len(data)
            archive.addfile(info, io.BytesIO(data))
    return buffer.getvalue()


def experiment_body(config: Any = CONFIG_YAML, **extra: Any) -> dict[str, Any]:
    """A valid ``POST /experiments`` body."""
    body = {"config": config, "model_definition": base64.b64encode(make_archive()).decode()}
    body.update(extra)
    return body


def create_experiment(http: httpx.Client, **extra: Any) -> dict[str, Any]:
    """Create an experiment through the API and return its JSON."""
    response = http.post("/experiments", json=experiment_body(**extra))
    assert response.status_code == 201, response.text
    result: dict[str, Any] = response.json()
    return result


def create_trial(database: Database, experiment_id: int, **kwargs: Any) -> tuple[int, str]:
    """Create a trial the way the master does (repository) and return (id, token)."""
    with database.session(write=True) as session:
        trial, token = trials_repo.create_trial(
            session,
            experiment_id=experiment_id,
            hparams=kwargs.pop("hparams", {"lr": 0.1}),
            seed=kwargs.pop("seed", 7),
            **kwargs,
        )
        return trial.id, token


def trial_of_new_experiment(
    database: Database, *, metric: str = "loss", smaller_is_better: bool = True
) -> int:
    """A trial of a new experiment (searcher ``metric``) made in the database directly, by the
    repositories (no master): its id."""
    with database.session(write=True) as session:
        workspaces_repo.ensure_defaults(session)
        experiment_id = experiments_repo.create_experiment(
            session,
            config={"searcher": {"metric": metric}},
            config_text=f"searcher: {{metric: {metric}}}",
            model_definition=make_archive(),
            owner="admin",
            searcher_metric=metric,
            smaller_is_better=smaller_is_better,
        ).id
        trial, _ = trials_repo.create_trial(
            session, experiment_id=experiment_id, hparams={}, seed=1
        )
        return trial.id


def bearer(token: str) -> dict[str, str]:
    """The Authorization header carrying ``token``."""
    return {"Authorization": f"Bearer {token}"}


@functools.cache
def password_hash(password: str) -> str:
    """The argon2 hash of ``password``, made once per test session (hashing is slow on
    purpose)."""
    return users_repo.hash_password(password)


def add_user(database: Database, username: str, password: str, *, admin: bool = False) -> None:
    """Create an account (if it does not exist) the way ``POST /users`` does."""
    with database.session(write=True) as session:
        try:
            users_repo.get_user(session, username)
        except NotFoundError:
            users_repo.create_user(
                session, username, password_hash=password_hash(password), admin=admin
            )


def sign_in(
    database: Database,
    username: str = ADMIN,
    password: str = ADMIN_PASSWORD,
    *,
    admin: bool | None = None,
    lifetime: timedelta = timedelta(hours=1),
) -> dict[str, str]:
    """The Authorization header of a new session of ``username`` (created first if missing;
    an administrator when it is :data:`ADMIN` unless ``admin`` says otherwise), made in the
    database directly, as ``POST /auth/login`` does."""
    add_user(database, username, password, admin=username == ADMIN if admin is None else admin)
    with database.session(write=True) as session:
        user = users_repo.get_user(session, username)
        token, _expires = users_repo.create_session(session, user.id, lifetime)
    return bearer(token)


def child_pids(pid: int) -> list[int]:
    """The pids of process ``pid``'s children (``/proc/<pid>/task/*/children``); a thread that
    ends while they are read is skipped."""
    found = []
    for task in Path(f"/proc/{pid}/task").iterdir():
        with contextlib.suppress(OSError):
            found += [int(child) for child in (task / "children").read_text().split()]
    return found
