"""Must show (issue 23): a checkpoint stored in GCS (the emulator) is registered as a model
version, found through the SDK by model name and version, downloaded and loaded with
``load_model_from_checkpoint_path``: the same predictions as the trained model; retention
and an experiment delete keep it. Also: its ``metadata.json`` holds the masked config."""

from __future__ import annotations

import json
import time
from collections.abc import Callable, Iterator
from pathlib import Path

import numpy as np
import pytest

from pedl.client import Client
from pedl.config._secrets import MASK
from pedl.keras import load_model_from_checkpoint_path
from tests.gcs_server import GCSServer
from tests.master.e2e import MasterProcess, logs, trials, wait_for
from tests.waits import scaled

pytestmark = pytest.mark.slow

MODEL_DIR = Path(__file__).parent / "gated_model"
SECRET = "s3cr3t-value-that-must-not-leak"
PROBE = np.linspace(-2.0, 2.0, 40, dtype="float32").reshape(10, 4)  # as model_def.PROBE

CONFIG = """
name: registry-gcs
entrypoint: model_def:GatedTrial
hyperparameters: {{global_batch_size: 16}}
searcher: {{name: single, metric: val_loss, smaller_is_better: true, max_length: {{batches: 12}}}}
scheduling_unit: 4
min_validation_period: {{batches: 4}}
min_checkpoint_period: {{batches: 4}}
max_restarts: 0
environment:
  environment_variables: ["PEDL_TEST_GATE={gate}", "MY_API_KEY={secret}"]
checkpoint_storage:
  type: gcs
  bucket: {bucket}
  prefix: registry
  save_trial_latest: 1
  save_trial_best: 0
  save_experiment_best: 0
"""


@pytest.fixture(scope="module")
def master(
    gcs_server: GCSServer, tmp_path_factory: pytest.TempPathFactory
) -> Iterator[MasterProcess]:
    process = MasterProcess(tmp_path_factory.mktemp("master")).start()  # inherits the emulator
    try:
        yield process
    finally:
        process.stop()


def _first_completed(client: Client, experiment_id: int, master: MasterProcess) -> str:
    deadline = time.monotonic() + scaled(120)
    while time.monotonic() < deadline:
        done = [
            c
            for c in client.get_experiment(experiment_id).list_checkpoints()
            if c.state == "COMPLETED"
        ]
        if done:
            return done[0].uuid
        time.sleep(0.2)
    details = "\n".join(logs(master.http, t["id"]) for t in trials(master.http, experiment_id))
    raise AssertionError(f"no checkpoint completed:\n{details}\n{master.log()[-3000:]}")


def _states_after_gc(client: Client, experiment_id: int) -> dict[str, str]:
    """The checkpoints' states once all but two (the latest, the registered) are DELETED."""
    deadline = time.monotonic() + scaled(60)
    while True:
        checkpoints = client.get_experiment(experiment_id).list_checkpoints()
        states = {c.uuid: c.state for c in checkpoints}
        if list(states.values()).count("DELETED") >= len(states) - 2 or time.monotonic() > deadline:
            return states
        time.sleep(0.2)


def _until(condition: Callable[[], bool], timeout: float = 60) -> None:
    deadline = time.monotonic() + scaled(timeout)
    while not condition():
        assert time.monotonic() < deadline, "timed out"
        time.sleep(0.2)


def _load_and_compare(checkpoint_dir: Path) -> None:
    trained = np.load(checkpoint_dir / "predictions.npy")  # the trial's model, at that point
    model = load_model_from_checkpoint_path(checkpoint_dir)
    np.testing.assert_allclose(model.predict(PROBE, verbose=0), trained, rtol=1e-6, atol=1e-7)


def test_registered_gcs_checkpoint_is_found_loaded_and_kept(
    master: MasterProcess, gcs_server: GCSServer, tmp_path: Path
) -> None:
    bucket = gcs_server.new_bucket()
    gate = tmp_path / "gate"
    config = CONFIG.format(gate=gate, secret=SECRET, bucket=bucket)
    with Client(master.url) as client:
        experiment = client.create_experiment(config, MODEL_DIR)
        first = _first_completed(client, experiment.id, master)
        model = client.create_model("blobs-gcs", description="registry e2e", labels=["gcs"])
        version = model.register_version(first)
        assert (version.model_version, version.checkpoint.uuid) == (1, first)
        gate.write_text("go")
        wait_for(master.http, experiment.id, {"COMPLETED"}, master=master)

        # Retention (keep only the latest) runs at the end (in the background) and deletes
        # the other checkpoints, not the registered one: its row and its objects in GCS stay.
        states = _states_after_gc(client, experiment.id)
        assert len(states) >= 3 and states[first] == "COMPLETED", states
        deleted = [u for u, s in states.items() if s == "DELETED"]
        for uuid in deleted:  # marked DELETED first, then its objects go
            _until(lambda u=uuid: gcs_server.keys(bucket, f"registry/{u}/") == [])  # type: ignore[misc]
        assert gcs_server.keys(bucket, f"registry/{first}/") != []

        # Found by model name and version, downloaded (through the master, from GCS), loaded.
        found = client.get_model("blobs-gcs").get_version(1)
        assert found is not None and found.checkpoint.uuid == first
        target = found.checkpoint.download(tmp_path / "v1")
        _load_and_compare(target)
        # metadata.json holds the config with the environment variable's value masked.
        text = (target / "metadata.json").read_text()
        variables = json.loads(text)["experiment_config"]["environment"]["environment_variables"]
        assert f"MY_API_KEY={MASK}" in variables
        for path in target.rglob("*"):
            assert not path.is_file() or SECRET.encode() not in path.read_bytes(), path

        # The experiment is deleted with its checkpoints' files: the registered one stays.
        client.get_experiment(experiment.id).delete()
        assert gcs_server.keys(bucket, f"registry/{first}/") != []
        others = [u for u, s in states.items() if u != first and s != "DELETED"]
        assert others
        _until(lambda: all(gcs_server.keys(bucket, f"registry/{u}/") == [] for u in others))
        kept = client.get_model("blobs-gcs").get_version(-1)
        assert kept is not None and kept.checkpoint.state == "COMPLETED"
        assert kept.checkpoint.experiment_id == experiment.id
        _load_and_compare(kept.checkpoint.download(tmp_path / "after-delete"))

        # The same through Determined's SDK names.
        from determined.experimental import client as det_client

        det_client.login(master.url)
        det_version = det_client.get_model("blobs-gcs").get_version(1)
        assert det_version is not None and det_version.checkpoint.uuid == first
