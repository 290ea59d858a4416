"""Integers beyond what any field holds, of any size, in an experiment config: refused with 422
naming the field, on SQLite and PostgreSQL, in every way a config reaches the master (the
JSON form as YAML text or as an object, multipart as YAML or as a JSON part, and ``POST
/experiments/{id}/continue`` as YAML or as an object), and by ``pedl.config`` itself (local
mode). 400 digits once answered 500 (formatting the integer as a float overflowed); 5,000,
more than Python converts from text, once answered 500 or 400 for the whole body."""

from __future__ import annotations

import json
import time
from typing import Any

import httpx
import pytest

from pedl.config import ConfigError, parse_config
from tests.master.helpers import CONFIG_YAML, experiment_body, make_archive
from tests.waits import scaled

from .conftest import Master

pytestmark = pytest.mark.slow  # a master process per database

DIGITS = [400, 5_000]
JSON_CONFIG = {
    "entrypoint": "model_def:MyTrial",
    "searcher": {"name": "single", "metric": "m", "max_length": {"batches": 1}},
    "max_restarts": 0,
}


def _long(digits: int) -> str:
    return "1" + "0" * (digits - 1)


def _json_config(digits: int) -> str:
    """The config as JSON text with ``max_restarts`` of ``digits`` digits."""
    text = json.dumps(JSON_CONFIG)
    return text.replace('"max_restarts": 0', f'"max_restarts": {_long(digits)}')


def _yaml_config(digits: int) -> str:
    return CONFIG_YAML + f"max_restarts: {_long(digits)}\n"


def _refused(response: httpx.Response, digits: int) -> None:
    assert response.status_code == 422, response.text[:2000]
    error: dict[str, Any] = response.json()["error"]
    assert error["field"] == "config.max_restarts", error
    assert f"an integer of {digits:,} digits is out of range" in error["message"], error


def _multipart(master: Master, name: str, config: str, kind: str) -> httpx.Response:
    return master.http.post(
        "/experiments",
        data={"activate": "false"},
        files={
            "config": (name, config.encode(), kind),
            "model_definition": ("model.tar.gz", make_archive(), "application/gzip"),
        },
    )


@pytest.mark.parametrize("digits", DIGITS)
def test_every_form_of_post_experiments_names_the_field(master: Master, digits: int) -> None:
    yaml_text, json_text = _yaml_config(digits), _json_config(digits)
    _refused(
        master.http.post("/experiments", json=experiment_body(yaml_text, activate=False)), digits
    )
    body = json.dumps(experiment_body("CONFIG", activate=False))
    body = body.replace('"CONFIG"', json_text)  # the integer as JSON writes it, unquoted
    response = master.http.post(
        "/experiments", content=body, headers={"Content-Type": "application/json"}
    )
    _refused(response, digits)
    _refused(_multipart(master, "config.yaml", yaml_text, "application/yaml"), digits)
    _refused(_multipart(master, "config.json", json_text, "application/json"), digits)
    master.assert_well()


def _ended_experiment(master: Master) -> int:
    response = master.http.post("/experiments", json=experiment_body(activate=False))
    assert response.status_code == 201, response.text
    experiment_id: int = response.json()["id"]
    assert master.http.post(f"/experiments/{experiment_id}/kill").status_code < 300
    deadline = time.monotonic() + scaled(30)
    while master.http.get(f"/experiments/{experiment_id}").json()["state"] != "CANCELED":
        assert time.monotonic() < deadline, "the killed experiment did not end"
        time.sleep(0.1)
    return experiment_id


def test_continue_names_the_field(master: Master) -> None:
    experiment_id = _ended_experiment(master)
    url = f"/experiments/{experiment_id}/continue"
    for digits in DIGITS:
        _refused(master.http.post(url, json={"config": f"max_restarts: {_long(digits)}\n"}), digits)
        body = '{"config": {"max_restarts": ' + _long(digits) + "}}"
        response = master.http.post(url, content=body, headers={"Content-Type": "application/json"})
        _refused(response, digits)
    assert master.http.get(f"/experiments/{experiment_id}").json()["state"] == "CANCELED"
    master.assert_well()


def test_the_bound_of_2_to_the_70_still_reads_as_a_number(master: Master) -> None:
    response = master.http.post(
        "/experiments",
        json=experiment_body(CONFIG_YAML + f"max_restarts: {2**70}\n", activate=False),
    )
    assert response.status_code == 422, response.text
    assert response.json()["error"]["field"] == "config.max_restarts"
    assert "integer 1.18e+21 is out of range" in response.text


@pytest.mark.parametrize("digits", [*DIGITS, 100_000])
def test_pedl_config_refuses_them_in_yaml_and_in_a_mapping(digits: int) -> None:
    """What local mode (``pedl experiment create --local``) and the SDK parse with."""
    sources: list[Any] = [_yaml_config(digits), {**JSON_CONFIG, "max_restarts": 10 ** (digits - 1)}]
    for source in sources:
        with pytest.raises(ConfigError) as caught:
            parse_config(source)
        [issue] = caught.value.issues
        assert issue.path == "max_restarts", issue
        assert f"an integer of {digits:,} digits is out of range" in issue.message, issue
