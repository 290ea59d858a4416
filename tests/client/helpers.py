"""A real master on loopback for the SDK and CLI tests, and ways to fill it the way trials do."""

from __future__ import annotations

import socket
import uuid
from pathlib import Path
from typing import Any

import httpx

from pedl.db import Database
from pedl.db import experiments as experiments_repo
from pedl.db import trials as trials_repo
from pedl.master import MasterSettings, create_app
from pedl.vocabulary import ExperimentState, TrialState
from tests.master.helpers import LiveServer
from tests.waits import scaled

CONFIG_YAML = """\
name: sdk-test
entrypoint: model_def:MyTrial
hyperparameters:
  lr: 0.1
searcher:
  name: single
  metric: val_loss
  smaller_is_better: true
  max_length: {{batches: 100}}
checkpoint_storage:
  type: shared_fs
  host_path: {storage}
"""


class LiveMaster:
    """The master's API (``create_app``) served by uvicorn in a thread on a free port."""

    def __init__(self, home: Path) -> None:
        self.db_url = f"sqlite:///{home / 'pedl.db'}"
        self.server = LiveServer(create_app(MasterSettings(home=home, db_url=self.db_url)))
        self.url = ""
        self.database = Database(self.db_url)

    def start(self) -> None:
        self.server.start()
        self.url = self.server.url

    def stop(self) -> None:
        self.server.stop()
        self.database.dispose()

    def create_trial(self, experiment_id: int, **hparams: Any) -> tuple[int, str]:
        """Create a trial the way the master does; return (id, token)."""
        with self.database.session(write=True) as session:
            trial, token = trials_repo.create_trial(
                session, experiment_id=experiment_id, hparams=hparams or {"lr": 0.1}, seed=3
            )
            return trial.id, token

    def set_trial_state(self, trial_id: int, state: TrialState) -> None:
        with self.database.session(write=True) as session:
            trials_repo.set_trial_state(session, trial_id, state)

    def set_experiment_state(self, experiment_id: int, state: ExperimentState) -> None:
        with self.database.session(write=True) as session:
            experiments_repo.set_experiment_state(session, experiment_id, state)

    def trial_api(self, token: str) -> httpx.Client:
        """An HTTP client carrying a trial's token (for its metrics, logs, checkpoints)."""
        return httpx.Client(
            base_url=self.url + "/api/v1",
            headers={"Authorization": f"Bearer {token}"},
            timeout=scaled(30),
        )


def unused_port() -> int:
    """A loopback port nothing listens on (bound then released)."""
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        port: int = sock.getsockname()[1]
        return port


def write_model_dir(root: Path) -> Path:
    """A small model directory with a .pedlignore'd file."""
    model = root / "model"
    model.mkdir(parents=True, exist_ok=True)
    (model / "model_def.py").write_text("class MyTrial:\n    pass\n")
    (model / "big.bin").write_bytes(b"x" * 10)
    (model / ".pedlignore").write_text("big.bin\n")
    return model


def write_config(root: Path, storage: Path, text: str | None = None) -> Path:
    """The test config (checkpoints under ``storage``) written to ``root/config.yaml``."""
    path = root / "config.yaml"
    path.write_text(text if text is not None else CONFIG_YAML.format(storage=storage))
    return path


def report(
    api: httpx.Client, trial_id: int, kind: str, batches: int, **metrics: float | str
) -> None:
    """Report one metric row as the trial would."""
    row = {"kind": kind, "total_batches": batches, "metrics": metrics}
    response = api.post(f"/trials/{trial_id}/metrics", json={"rows": [row]})
    assert response.status_code == 200, response.text


def store_checkpoint(
    api: httpx.Client,
    trial_id: int,
    storage: Path,
    batches: int,
    files: dict[str, bytes],
    *,
    validation_metrics: dict[str, float] | None = None,
) -> str:
    """Write ``files`` as a checkpoint in shared_fs ``storage`` and register it (its metadata
    holding ``validation_metrics``, as a trial's does, if given); its uuid."""
    checkpoint_uuid = str(uuid.uuid4())
    for relpath, data in files.items():
        path = storage / checkpoint_uuid / relpath
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_bytes(data)
    metadata: dict[str, Any] = {"framework": "test"}
    if validation_metrics is not None:
        metadata["validation_metrics"] = validation_metrics
    body = {
        "uuid": checkpoint_uuid,
        "total_batches": batches,
        "resources": {relpath: len(data) for relpath, data in files.items()},
        "metadata": metadata,
    }
    response = api.post(f"/trials/{trial_id}/checkpoints", json=body)
    assert response.status_code == 201, response.text
    return checkpoint_uuid
