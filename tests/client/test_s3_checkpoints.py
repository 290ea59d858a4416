"""An experiment whose checkpoint_storage is S3 (moto's server on loopback), through a real
master: its keys are masked in every view but reach the trial, and its checkpoints are listed
and downloaded through the master, which reads them from the bucket."""

from __future__ import annotations

import json
import sys
import uuid
from pathlib import Path

import pytest
from click.testing import CliRunner

from pedl.cli import cli
from pedl.client import Client, PEDLError
from pedl.config import parse_config
from pedl.config._secrets import MASK
from pedl.storage import S3Storage, make_storage
from tests.s3_server import ACCESS_KEY, SECRET_KEY, S3Server

from .helpers import CONFIG_YAML, LiveMaster

FILES = {"state/variables.bin": bytes(range(256)) * 50, "metadata.json": b"{}", "empty": b""}


def s3_config_text(bucket: str, endpoint_url: str) -> str:
    shared_fs = CONFIG_YAML.format(storage="unused")
    head = shared_fs[: shared_fs.index("checkpoint_storage:")]
    return head + (
        "checkpoint_storage:\n"
        f"  type: s3\n  bucket: {bucket}\n  prefix: pedl/exp\n"
        f"  access_key: {ACCESS_KEY}\n  secret_key: {SECRET_KEY}\n  endpoint_url: {endpoint_url}\n"
    )


def test_s3_keys_are_masked_and_checkpoints_download_through_the_master(
    master: LiveMaster, client: Client, model_dir: Path, s3_server: S3Server, tmp_path: Path
) -> None:
    bucket = s3_server.new_bucket()
    experiment = client.create_experiment(s3_config_text(bucket, s3_server.endpoint_url), model_dir)
    shown = client.get_experiment(experiment.id).config["checkpoint_storage"]
    assert shown["access_key"] == MASK and shown["secret_key"] == MASK
    assert (shown["bucket"], shown["endpoint_url"]) == (bucket, s3_server.endpoint_url)
    described = CliRunner().invoke(
        cli, ["--master", master.url, "experiment", "describe", str(experiment.id), "--json"]
    )
    assert described.exit_code == 0, described.output
    assert json.loads(described.output)["config"]["checkpoint_storage"]["secret_key"] == MASK
    assert SECRET_KEY not in described.output and ACCESS_KEY not in described.output

    # The trial's own start has the real keys; it stores a checkpoint with them, as a trial does.
    trial_id, token = master.create_trial(experiment.id)
    with master.trial_api(token) as api:
        start = api.get(f"/trials/{trial_id}/start")
        assert start.status_code == 200, start.text
        storage = make_storage(parse_config(start.json()["config"]).checkpoint_storage)
        assert isinstance(storage, S3Storage)
        checkpoint_uuid = str(uuid.uuid4())
        with storage.store_path(checkpoint_uuid) as path:
            for relpath, data in FILES.items():
                (path / relpath).parent.mkdir(parents=True, exist_ok=True)
                (path / relpath).write_bytes(data)
        body = {
            "uuid": checkpoint_uuid,
            "total_batches": 10,
            "resources": {relpath: len(data) for relpath, data in FILES.items()},
            "metadata": {},
        }
        assert api.post(f"/trials/{trial_id}/checkpoints", json=body).status_code == 201
    assert s3_server.keys(bucket, f"pedl/exp/{checkpoint_uuid}/") != []

    checkpoint = client.get_checkpoint(checkpoint_uuid)
    assert checkpoint.list_files() == {k: len(v) for k, v in sorted(FILES.items())}
    target = checkpoint.download(tmp_path / "dl")  # local=True: still through the master
    assert {
        p.relative_to(target).as_posix(): p.read_bytes() for p in target.rglob("*") if p.is_file()
    } == FILES

    storage.delete(checkpoint_uuid)
    with pytest.raises(PEDLError, match="not in storage"):
        checkpoint.download(tmp_path / "again")


def test_without_boto3_the_master_refuses_an_s3_experiment(
    client: Client, model_dir: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setitem(sys.modules, "boto3", None)  # as if it were not installed
    with pytest.raises(PEDLError) as caught:
        client.create_experiment(s3_config_text("b", "http://127.0.0.1:9"), model_dir)
    message = str(caught.value)
    assert "config.checkpoint_storage.type" in message and "pip install 'pedl[s3]'" in message
