"""A value no database stores (a NUL, a NaN) in an experiment config sent as a JSON object is
refused naming its field (``config.name``, not the whole ``body.config``), and a character
YAML does not allow in config text is a 422 naming ``config`` and its line, not a 500. On a
real master over HTTP, on SQLite and PostgreSQL; nothing is stored."""

from __future__ import annotations

import json
from typing import Any

import httpx
import pytest
import yaml

from .helpers import CONFIG_YAML, experiment_body, make_archive


def _config(**changes: Any) -> dict[str, Any]:
    config: dict[str, Any] = yaml.safe_load(CONFIG_YAML)
    config.update(changes)
    return config


def _refused(client: httpx.Client, config: Any) -> dict[str, Any]:
    body = json.dumps(experiment_body(config, activate=False))  # NaN written as NaN
    response = client.post(
        "/experiments", content=body, headers={"Content-Type": "application/json"}
    )
    assert response.status_code == 422, response.text
    error: dict[str, Any] = response.json()["error"]
    return error


@pytest.mark.parametrize(
    ("config", "field", "message"),
    [
        (_config(name="a\x00b"), "config.name", "NUL"),
        (_config(description="\x00"), "config.description", "NUL"),
        (_config(hyperparameters={"lr": "0.\x001"}), "config.hyperparameters.lr", "NUL"),
        (_config(hyperparameters={"l\x00r": 0.1}), "config.hyperparameters.l\\x00r", "key"),
        (_config(hyperparameters={"lr": float("nan")}), "config.hyperparameters.lr", "finite"),
    ],
)
def test_a_json_config_value_is_refused_by_its_field(
    client: httpx.Client, config: dict[str, Any], field: str, message: str
) -> None:
    error = _refused(client, config)
    assert error["field"] == field, error
    assert [issue["field"] for issue in error["issues"]] == [field]
    assert message in error["issues"][0]["message"]
    assert client.get("/experiments").json()["items"] == []


def test_a_json_config_part_is_refused_by_its_field(client: httpx.Client) -> None:
    """The same through a multipart body (what the CLI and the SDK send)."""
    response = client.post(
        "/experiments",
        files={
            "config": ("config.json", json.dumps(_config(name="a\x00b")), "application/json"),
            "model_definition": ("model.tar.gz", make_archive(), "application/gzip"),
        },
        data={"activate": "false"},
    )
    assert response.status_code == 422, response.text
    error = response.json()["error"]
    assert error["field"] == "config.name", error
    assert client.get("/experiments").json()["items"] == []


def test_a_control_character_in_config_text_is_a_422_with_its_line(client: httpx.Client) -> None:
    text = CONFIG_YAML.replace("lr: 0.1", "lr: 0.1\x01")
    error = _refused(client, text)
    assert error["field"] == "config", error
    (issue,) = error["issues"]
    assert "#x0001" in issue["message"] and issue["line"] == 4
    assert client.get("/experiments").json()["items"] == []
