"""Secrets in a template are masked wherever it is shown, as an experiment config's are, on
SQLite and PostgreSQL: to every signed-in user, its creator and administrators included (an
experiment's owner sees its secrets in no view either; only its trials get them). The stored
template keeps the real values, and so does an experiment it is merged into: the master
merges it (``POST /experiments`` with ``template``, which the SDK and ``pedl experiment create
--template`` send), so the masks never reach a config. A ``PUT`` stores what it is given, as
a config is stored. Templates once showed every secret in clear to every signed-in user."""

from __future__ import annotations

import contextlib
import json
from collections.abc import Iterator
from typing import Any

import httpx
import pytest

from pedl.client import Client, NotFoundError
from pedl.config import MASK
from pedl.db import experiments as experiments_repo
from pedl.db import templates as templates_repo
from tests.master.e2e import MODEL_DIR
from tests.master.helpers import CONFIG_YAML, experiment_body

from .conftest import Master

pytestmark = pytest.mark.slow  # a master process per database

PASSWORD = "template-test-password-1"
TEMPLATE = {
    "description": "shared settings",
    "checkpoint_storage": {
        "type": "s3",
        "bucket": "models",
        "access_key": "AKIA-ACCESS-1",
        "secret_key": "s3-secret-2",
    },
    "environment": {
        "environment_variables": [
            "WANDB_API_KEY=wandb-secret-3",
            "DATA_URL=https://reader:url-secret-4@data.example/set",
            "PLAIN=visible",
        ],
    },
}
SECRETS = ("AKIA-ACCESS-1", "s3-secret-2", "wandb-secret-3", "url-secret-4")
SHOWN = {
    "description": "shared settings",
    "checkpoint_storage": {
        "type": "s3",
        "bucket": "models",
        "access_key": MASK,
        "secret_key": MASK,
    },
    "environment": {
        "environment_variables": [
            f"WANDB_API_KEY={MASK}",
            f"DATA_URL=https://reader:{MASK}@data.example/set",
            "PLAIN=visible",
        ],
    },
}
PER_DEVICE = {
    "environment": {
        "environment_variables": {"cpu": ["HF_TOKEN=hf-secret-5", "A=1"], "cuda": ["B=2"]}
    }
}


@contextlib.contextmanager
def _signed_in(master: Master, username: str) -> Iterator[httpx.Client]:
    """A new user ``username`` (made by the administrator), signed in."""
    created = master.http.post("/users", json={"username": username, "password": PASSWORD})
    assert created.status_code in (201, 409), created.text
    with httpx.Client(base_url=master.process.url + "/api/v1", timeout=master.http.timeout) as http:
        login = http.post("/auth/login", json={"username": username, "password": PASSWORD})
        assert login.status_code == 200, login.text
        http.headers["Authorization"] = f"Bearer {login.json()['token']}"
        yield http


def _stored_template(master: Master, name: str) -> dict[str, Any]:
    database = master.database()
    try:
        with database.session() as session:
            return dict(templates_repo.get_template(session, name).config)
    finally:
        database.dispose()


def _stored_config(master: Master, experiment_id: int) -> dict[str, Any]:
    database = master.database()
    try:
        with database.session() as session:
            return dict(experiments_repo.get_experiment(session, experiment_id).config)
    finally:
        database.dispose()


def test_every_user_sees_a_templates_secrets_masked(master: Master) -> None:
    with _signed_in(master, "tpl-owner") as owner, _signed_in(master, "tpl-other") as other:
        _show_masked(master, owner, other)


def _show_masked(master: Master, owner: httpx.Client, other: httpx.Client) -> None:
    name = "with-secrets"
    put = owner.put(f"/templates/{name}", json={"config": TEMPLATE})
    assert put.status_code == 200, put.text
    views = {
        "PUT's answer": put,
        "owner GET": owner.get(f"/templates/{name}"),
        "other GET": other.get(f"/templates/{name}"),
        "administrator GET": master.http.get(f"/templates/{name}"),
    }
    for who, response in views.items():
        assert response.status_code == 200, (who, response.text)
        assert response.json()["config"] == SHOWN, who
        assert response.json()["owner"] == "tpl-owner"
    for http in (owner, other, master.http):
        listed = http.get("/templates")
        assert listed.status_code == 200, listed.text
        assert [t["config"] for t in listed.json() if t["name"] == name] == [SHOWN]
        for secret in SECRETS:
            assert secret not in listed.text
    for response in views.values():
        for secret in SECRETS:
            assert secret not in response.text
    assert _stored_template(master, name) == TEMPLATE  # the real values are kept

    per_device = owner.put("/templates/per-device", json={"config": PER_DEVICE})
    assert per_device.status_code == 200, per_device.text
    variables = other.get("/templates/per-device").json()["config"]["environment"]
    assert variables["environment_variables"] == {
        "cpu": [f"HF_TOKEN={MASK}", "A=1"],
        "cuda": ["B=2"],
    }

    # A PUT stores what it is given, masks included, as an experiment's config is stored.
    again = owner.put(f"/templates/{name}", json={"config": SHOWN})
    assert again.status_code == 200, again.text
    assert _stored_template(master, name) == SHOWN
    assert other.put(f"/templates/{name}", json={"config": {}}).status_code == 403
    master.assert_well()


def test_the_master_merges_a_template_with_its_real_secrets(master: Master) -> None:
    template = {"environment": TEMPLATE["environment"], "description": "from the template"}
    with _signed_in(master, "tpl-user") as user:
        assert user.put("/templates/env-secrets", json={"config": template}).status_code == 200

    # The JSON form, by another user than the template's creator.
    body = experiment_body(CONFIG_YAML, activate=False, template="env-secrets")
    created = master.http.post("/experiments", json=body)
    assert created.status_code == 201, created.text
    shown = created.json()
    assert shown["description"] == "from the template"
    assert (
        shown["config"]["environment"]["environment_variables"]
        == (SHOWN["environment"]["environment_variables"])
    )
    stored = _stored_config(master, shown["id"])
    assert (
        stored["environment"]["environment_variables"]
        == (TEMPLATE["environment"]["environment_variables"])
    )
    assert "WANDB_API_KEY=wandb-secret-3" not in json.dumps(created.json())

    # The SDK (multipart), as `pedl experiment create --template` sends it.
    with Client(master.process.url) as client:
        experiment = client.create_experiment(
            CONFIG_YAML, MODEL_DIR, activate=False, template="env-secrets"
        )
        stored = _stored_config(master, experiment.id)
        assert "WANDB_API_KEY=wandb-secret-3" in stored["environment"]["environment_variables"]
        assert f"WANDB_API_KEY={MASK}" in experiment.config["environment"]["environment_variables"]
        with pytest.raises(NotFoundError):
            client.create_experiment(CONFIG_YAML, MODEL_DIR, activate=False, template="none")
    missing = master.http.post("/experiments", json={**body, "template": "no-such-template"})
    assert missing.status_code == 404, missing.text
    bad_name = master.http.post("/experiments", json={**body, "template": "../x"})
    assert bad_name.status_code == 422, bad_name.text
    master.assert_well()
