"""A checkpoint's ``metadata.json`` carries the experiment config masked as the API masks it:
environment variable values of secret-looking names and the storage's keys never appear."""

from __future__ import annotations

import json
from pathlib import Path

from pedl.config._secrets import MASK

from .harness import BASE_CONFIG, make_run, train
from .trials import SmallTrial

SECRETS = ("AKIA-test-access-key", "secret-key-value-xyz", "env-token-value-abc")

CONFIG = (
    BASE_CONFIG
    + f"""
environment:
  environment_variables: ["MY_TOKEN={SECRETS[2]}", "PLAIN=visible"]
checkpoint_storage:
  type: s3
  bucket: b
  access_key: {SECRETS[0]}
  secret_key: {SECRETS[1]}
"""
)


def test_metadata_json_holds_the_masked_config(tmp_path: Path) -> None:
    run = make_run(tmp_path, config=CONFIG, overrides=("searcher.max_length.batches=2",))
    train(SmallTrial, run)
    storage_id, _batches = run.recorder.checkpoints[-1]
    path = run.storage.path_of(storage_id) / "metadata.json"
    text = path.read_text()
    assert not any(secret in text for secret in SECRETS), text
    config = json.loads(text)["experiment_config"]
    storage = config["checkpoint_storage"]
    assert (storage["access_key"], storage["secret_key"], storage["bucket"]) == (MASK, MASK, "b")
    variables = config["environment"]["environment_variables"]
    assert f"MY_TOKEN={MASK}" in variables and "PLAIN=visible" in variables
