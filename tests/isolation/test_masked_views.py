"""Secrets in an experiment's config are masked wherever it is shown (the API, and so the SDK,
``pedl experiment describe`` and the web UI), and kept where they are used (the stored config,
the trial's own start)."""

from __future__ import annotations

import json
from pathlib import Path

from click.testing import CliRunner

from pedl.cli import cli
from pedl.client import Client
from pedl.db import experiments as experiments_repo
from tests.client.helpers import CONFIG_YAML, LiveMaster

CONFIG = (
    CONFIG_YAML
    + """\
environment:
  environment_variables:
    - WANDB_API_KEY=wandb-secret-1
    - DB_PASSWORD=db-secret-2
    - DATA_URL=https://reader:url-secret-3@data.example/set
    - PLAIN=visible
"""
)
SHOWN = [
    "WANDB_API_KEY=********",
    "DB_PASSWORD=********",
    "DATA_URL=https://reader:********@data.example/set",
    "PLAIN=visible",
]
HIDDEN = ("wandb-secret-1", "db-secret-2", "url-secret-3")


def test_every_view_of_the_config_masks_its_secrets(
    master: LiveMaster, client: Client, storage: Path, model_dir: Path
) -> None:
    created = client.create_experiment(CONFIG.format(storage=storage), model_dir)
    assert created.config["environment"]["environment_variables"] == SHOWN  # POST's answer
    assert client.get_experiment(created.id).config["environment"]["environment_variables"] == (
        SHOWN
    )
    listed = [e for e in client.list_experiments() if e.id == created.id]
    assert listed[0].config["environment"]["environment_variables"] == SHOWN
    result = CliRunner().invoke(
        cli, ["--master", master.url, "experiment", "describe", str(created.id), "--json"]
    )
    assert result.exit_code == 0, result.output
    described = json.loads(result.output)
    assert described["config"]["environment"]["environment_variables"] == SHOWN
    for secret in HIDDEN:
        assert secret not in result.output

    # The stored config keeps the real values, and the trial's own start shows them.
    with master.database.session() as session:
        stored = experiments_repo.get_experiment(session, created.id).config
    assert "WANDB_API_KEY=wandb-secret-1" in stored["environment"]["environment_variables"]
    trial_id, token = master.create_trial(created.id)
    with master.trial_api(token) as trial_api:
        start = trial_api.get(f"/trials/{trial_id}/start")
    assert start.status_code == 200, start.text
    assert (
        "DB_PASSWORD=db-secret-2" in start.json()["config"]["environment"]["environment_variables"]
    )
