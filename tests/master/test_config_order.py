"""An experiment's config comes back with its keys in the user's order on every backend
(PostgreSQL's ``jsonb`` sorted them: by length, then bytes), through the API, ``pedl
experiment describe`` and a database upgraded from before the change."""

from __future__ import annotations

import json
from collections.abc import Iterator
from datetime import UTC, datetime
from typing import Any

import httpx
import pytest
import sqlalchemy as sa
from click.testing import CliRunner
from sqlalchemy.dialects import postgresql

from pedl.cli import cli
from pedl.db import Database, Experiment, upgrade

from .helpers import LiveServer, create_experiment

CONFIG = """\
name: ordered
entrypoint: model_def:MyTrial
hyperparameters:
  learning_rate: {type: log, minval: -4, maxval: -1}
  units: {type: int, minval: 8, maxval: 64}
  optimizer:
    momentum: 0.9
    name: sgd
    beta: {type: double, minval: 0.1, maxval: 0.2}
  b: 2
searcher:
  name: single
  metric: val_loss
  max_length: {batches: 100}
"""
ORDER = ["learning_rate", "units", "optimizer", "b"]
NESTED_ORDER = ["momentum", "name", "beta"]


def test_the_api_gives_the_hyperparameters_in_the_users_order(client: httpx.Client) -> None:
    experiment_id = create_experiment(client, config=CONFIG)["id"]
    config = client.get(f"/experiments/{experiment_id}").json()["config"]
    assert list(config["hyperparameters"]) == ORDER
    assert list(config["hyperparameters"]["optimizer"]) == NESTED_ORDER


def test_describe_shows_the_hyperparameters_in_the_users_order(
    client: httpx.Client, live_server: LiveServer
) -> None:
    experiment_id = create_experiment(client, config=CONFIG)["id"]
    result = CliRunner().invoke(
        cli, ["--master", live_server.url, "experiment", "describe", str(experiment_id), "--json"]
    )
    assert result.exit_code == 0, result.output
    hyperparameters = json.loads(result.output)["config"]["hyperparameters"]
    assert list(hyperparameters) == ORDER
    assert list(hyperparameters["optimizer"]) == NESTED_ORDER


# Upgrading a database written before the change -------------------------------------------

# What the master stored for CONFIG (abridged): the canonical document, keys as pydantic wrote
# them, the user's hyperparameters in the user's order.
STORED: dict[str, Any] = {
    "name": "ordered",
    "entrypoint": "model_def:MyTrial",
    "hyperparameters": {
        "learning_rate": {"type": "log", "minval": -4.0, "maxval": -1.0, "base": 10.0},
        "units": {"type": "int", "minval": 8, "maxval": 64},
        "optimizer": {
            "momentum": {"type": "const", "val": 0.9},
            "name": {"type": "const", "val": "sgd"},
            "beta": {"type": "double", "minval": 0.1, "maxval": 0.2},
        },
        "b": {"type": "const", "val": 2},
    },
    "searcher": {"name": "single", "metric": "val_loss", "max_length": {"batches": 100}},
    "environment": {"environment_variables": {"ZETA": "1", "A_LONGER_NAME": "2"}},
}

OLD_JSON = sa.JSON().with_variant(postgresql.JSONB(), "postgresql")
"""The column type of ``experiments.config`` up to revision 0006."""


@pytest.fixture
def at_0006(fresh_db_url: str) -> Iterator[Database]:
    """A database at revision 0006 holding two experiments stored as that revision stored
    them: one whose ``config_text`` is CONFIG, one whose text does not parse."""
    database = Database(fresh_db_url)
    try:
        upgrade(database.engine, "0006")
        experiments = sa.table(
            "experiments",
            *(sa.column(name) for name in ("id", "name", "config_text", "owner", "state")),
            *(sa.column(name) for name in ("progress", "smaller_is_better", "created_at")),
            sa.column("config", OLD_JSON),
        )
        row = {
            "owner": "admin",
            "state": "PAUSED",
            "progress": 0.0,
            "smaller_is_better": True,
            "created_at": datetime(2026, 11, 25, tzinfo=UTC),
            "config": STORED,
            "name": "ordered",
        }
        with database.engine.begin() as connection:
            connection.execute(experiments.insert().values(id=1, config_text=CONFIG, **row))
            connection.execute(experiments.insert().values(id=2, config_text="{[", **row))
        yield database
    finally:
        database.dispose()


def test_the_upgrade_keeps_every_config_and_puts_it_back_in_the_users_order(
    at_0006: Database,
) -> None:
    at_0006.upgrade()
    with at_0006.session() as session:
        restored = session.get(Experiment, 1)
        unparsable = session.get(Experiment, 2)
        assert restored is not None and unparsable is not None
        assert restored.config == STORED and unparsable.config == STORED  # nothing lost
        hyperparameters = restored.config["hyperparameters"]
        assert list(hyperparameters) == ORDER
        assert list(hyperparameters["optimizer"]) == NESTED_ORDER
        # The keys the text does not name (defaults the master filled in) follow, in order.
        assert list(restored.config)[:4] == ["name", "entrypoint", "hyperparameters", "searcher"]
    # The column now keeps what is written as written.
    with at_0006.session(write=True) as session:
        experiment = session.get(Experiment, 2)
        assert experiment is not None
        experiment.config = {"z": 1, "a": {"zz": 2, "b": 3}}
    with at_0006.session() as session:
        experiment = session.get(Experiment, 2)
        assert experiment is not None
        assert json.dumps(experiment.config) == '{"z": 1, "a": {"zz": 2, "b": 3}}'
