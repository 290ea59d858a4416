"""An experiment's config as submitted (``original_config`` of ``GET /experiments/{id}``,
Determined's field of that name; the web UI's Config tab shows it beside the effective
config) over real HTTP, on SQLite and PostgreSQL: the text as written, comments and all, and
its secrets masked as in the effective config when it has any."""

from __future__ import annotations

import httpx

from pedl.config import MASK

from .helpers import CONFIG_YAML, create_experiment


def test_the_submitted_text_comes_back_as_written(client: httpx.Client) -> None:
    text = "# my first search\n" + CONFIG_YAML + "# tuned later\n"
    created = create_experiment(client, config=text)
    body = client.get(f"/experiments/{created['id']}").json()
    assert body["original_config"] == text
    # Only what was written: no defaults filled in (the effective config has them).
    assert "max_restarts" in body["config"] and "max_restarts" not in body["original_config"]
    listed = client.get("/experiments").json()["items"]
    assert all(e.get("original_config") is None for e in listed)  # the one experiment's read


def test_its_secrets_are_masked_as_in_the_effective_config(client: httpx.Client) -> None:
    text = CONFIG_YAML + (
        "environment:\n"
        "  environment_variables:\n"
        "    - WANDB_API_KEY=abc123  # the team's\n"
        "    - DATA_URL=postgresql://me:hunter2@db/x\n"
        "    - PLAIN=visible\n"
    )
    created = create_experiment(client, config=text)
    shown = client.get(f"/experiments/{created['id']}").json()["original_config"]
    assert "abc123" not in shown and "hunter2" not in shown, shown
    assert f"WANDB_API_KEY={MASK}" in shown and "PLAIN=visible" in shown, shown
    assert shown.startswith("# As submitted, its secrets masked"), shown
    assert "name: mnist" in shown


def test_a_config_given_as_a_mapping_is_shown_as_json(client: httpx.Client) -> None:
    config = {
        "name": "mapped",
        "entrypoint": "model_def:MyTrial",
        "hyperparameters": {"lr": 0.1},
        "searcher": {"name": "single", "metric": "val_loss", "max_length": {"batches": 10}},
    }
    created = create_experiment(client, config=config)
    shown = client.get(f"/experiments/{created['id']}").json()["original_config"]
    assert shown.startswith("{\n") and '"name": "mapped"' in shown, shown
