"""A root master never accepts an experiment it cannot start (issue 36, item 5): where its
``trial_user`` cannot run the trials' Python (the experiment's ``PEDL_TRIAL_PYTHON``, else the
master's own: a Python under ``/root``, mode 0700, as pyenv installs it) or reach their
checkpoint storage, ``POST /experiments`` answers 422 naming what stops it and the ways out,
and stores nothing; an experiment with a Python and a storage the trial user reaches is
accepted. A real root master process over HTTP, on SQLite and PostgreSQL."""

from __future__ import annotations

import base64
import sys
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import httpx
import pytest

from pedl import model_def
from pedl.master.rm import TrialUser
from tests.isolation.test_trial_user import (
    MODEL_DIR,
    needs_root,
    open_dir,
    trial_python,
)
from tests.master.conftest import BACKENDS, _create_pg_database, _drop_pg_database
from tests.master.e2e import MasterProcess

__all__ = ["open_dir", "trial_python"]  # the fixtures, used here

pytestmark = [needs_root, pytest.mark.slow]

CONFIG = """
name: unstartable
hyperparameters: {{global_batch_size: 16}}
searcher: {{name: single, metric: val_loss, max_length: {{batches: 10}}}}
{storage}
environment:
  environment_variables: [{variables}]
"""
WAYS_OUT = ("outside root's home", "PEDL_TRIAL_PYTHON", "PEDL_TRIAL_USER=")


@pytest.fixture(params=BACKENDS)
def root_master(
    request: pytest.FixtureRequest, tmp_path: Path, open_dir: Path
) -> Iterator[MasterProcess]:
    """A master running as root with trial_user nobody, its checkpoint_dir in a directory
    nobody reaches, on each database."""
    env = {"PEDL_TRIAL_USER": "nobody", "PEDL_CHECKPOINT_DIR": str(open_dir / "checkpoints")}
    name = None
    if request.param == "postgresql":
        name, env["PEDL_DB_URL"] = _create_pg_database()
    master = MasterProcess(tmp_path / "master", env=env)
    try:
        yield master.start()
    finally:
        master.stop()
        if name is not None:
            _drop_pg_database(name)


def _create(master: MasterProcess, *, python: str | None, storage: Path | None) -> httpx.Response:
    config = CONFIG.format(
        storage=f"checkpoint_storage: {{type: shared_fs, host_path: {storage}}}" if storage else "",
        variables=f"'PEDL_TRIAL_PYTHON={python}'" if python else "",
    )
    archive = base64.b64encode(model_def.package(MODEL_DIR)).decode()
    body: dict[str, Any] = {"config": config, "model_definition": archive, "activate": False}
    return master.http.post("/experiments", json=body)


def _refused(answer: httpx.Response, field: str, *needed: str) -> str:
    assert answer.status_code == 422, answer.text
    error = answer.json()["error"]
    assert error["field"] == field, error
    message: str = error["message"]
    assert message.startswith("no trial of this experiment could start on this master"), message
    for text in needed:
        assert text in message, (text, message)
    return message


def test_a_root_master_refuses_experiments_its_trial_user_cannot_start(
    root_master: MasterProcess, tmp_path: Path, open_dir: Path, trial_python: str
) -> None:
    variables = "config.environment.environment_variables"
    # A PEDL_TRIAL_PYTHON in a directory nobody may enter (pytest's: root's, 0700).
    hidden = tmp_path / "bin" / "python"
    hidden.parent.mkdir(mode=0o700)
    hidden.write_text(f'#!/bin/sh\nexec {sys.executable} "$@"\n')
    hidden.chmod(0o755)
    answer = _create(root_master, python=str(hidden), storage=None)
    _refused(answer, variables, "trials run as nobody", str(hidden), "may not enter", *WAYS_OUT)

    # A checkpoint storage nobody cannot reach.
    private = tmp_path / "checkpoints"
    answer = _create(root_master, python=trial_python, storage=private)
    _refused(
        answer,
        "config.checkpoint_storage",
        f"cannot reach the checkpoint storage {private}",
        "checkpoint_storage.host_path",
        "PEDL_TRIAL_USER=",
    )

    # The master's own Python, the trials' default: refused where nobody cannot run it (a
    # Python under /root, as on this machine's pyenv), accepted where it can.
    try:
        TrialUser.named("nobody").check_runnable(sys.executable)
    except PermissionError:
        answer = _create(root_master, python=None, storage=None)
        _refused(answer, variables, "cannot run the Python", sys.executable, *WAYS_OUT)
        assert "This is the master's own Python, the trials' default" in root_master.log()
        accepted = 0
    else:
        assert _create(root_master, python=None, storage=None).status_code == 201
        accepted = 1

    # A Python and a storage nobody reaches: accepted.
    answer = _create(root_master, python=trial_python, storage=open_dir / "storage")
    assert answer.status_code == 201, answer.text
    listed = root_master.http.get("/experiments").json()
    assert listed["total"] == accepted + 1, listed  # nothing of the refused ones was stored
