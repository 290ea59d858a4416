"""The same config searches the same hyperparameters on SQLite and PostgreSQL.

PostgreSQL's ``jsonb`` sorts an object's keys (by length, then bytes); the master builds the
searcher from the config it stored, and random draws were made in the config's key order, so
the same seed gave other learning rates on PostgreSQL than on SQLite. Here one real master per
backend (with its orchestrator) runs a random, a grid, an adaptive ASHA and a TPE search of
one config whose hyperparameters are not in sorted order, and every trial it creates must have
the hyperparameters and seed that the searcher gives in this process for the config as
written: the same on both backends. Trials need not train: the model definition sleeps on
import and the master has one slot, so the trials the searchers create first all exist (one
RUNNING, the rest QUEUED) while nothing trains.
"""

from __future__ import annotations

import base64
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import httpx
import pytest

from pedl.config import parse_config
from pedl.master import MasterSettings, create_app
from pedl.master.api._app import make_database
from pedl.master.orchestrator import Orchestrator
from pedl.searcher import NewTrial, SearcherRunner, make_search_method, missing_optuna_requirements
from tests.waits import scaled

from .conftest import _create_pg_database, _drop_pg_database
from .e2e import free_port
from .helpers import START_TIMEOUT_S, LiveServer, make_archive, sign_in

SLEEPING_MODEL = {"model_def.py": b"import time\ntime.sleep(120)\n\nclass MyTrial:\n    pass\n"}

# Not sorted at either level, and not in jsonb's order (by length, then bytes) either.
HYPERPARAMETERS = """
hyperparameters:
  learning_rate: {type: log, base: 10, minval: -4, maxval: -1, count: 2}
  filters: {type: int, minval: 8, maxval: 64, count: 2}
  optimizer:
    momentum: {type: double, minval: 0.5, maxval: 0.99, count: 1}
    kind: {type: categorical, vals: [sgd, adam]}
  dropout: {type: double, minval: 0.0, maxval: 0.5, count: 1}
  global_batch_size: 16
"""

SEARCHERS = {
    "random": "{name: random, metric: val_loss, max_trials: 4, max_length: {batches: 8}}",
    "grid": "{name: grid, metric: val_loss, max_length: {batches: 8}}",
    "adaptive_asha": (
        "{name: adaptive_asha, metric: val_loss, max_trials: 6, max_length: {batches: 8}}"
    ),
    "tpe": (
        "{name: tpe, metric: val_loss, max_trials: 6, max_concurrent_trials: 3, "
        "n_startup_trials: 2, max_length: {batches: 8}}"
    ),
}


def config_yaml(searcher: str) -> str:
    return (
        f"name: order-{searcher}\nentrypoint: model_def:MyTrial\n"
        f"reproducibility: {{experiment_seed: 11}}\n"
        f"searcher: {SEARCHERS[searcher]}\n{HYPERPARAMETERS}"
    )


def searchers() -> list[str]:
    return [s for s in SEARCHERS if s != "tpe" or missing_optuna_requirements("tpe") is None]


def expected_trials(searcher: str) -> list[tuple[int, int, dict[str, Any]]]:
    """(request id, seed, hyperparameters) of the trials the search creates first, from the
    config as written (its key order), computed here."""
    config = parse_config(config_yaml(searcher))
    runner = SearcherRunner(make_search_method(config), seed=config.reproducibility.experiment_seed)
    return [
        (op.request_id, op.trial_seed, op.hparams)
        for op in runner.initial_operations()
        if isinstance(op, NewTrial)
    ]


@pytest.fixture
def postgresql_url() -> Iterator[str]:
    name, url = _create_pg_database()
    try:
        yield url
    finally:
        _drop_pg_database(name)


def search_on(db_url: str, home: Path) -> dict[str, list[tuple[int, int, dict[str, Any]]]]:
    """Each searcher's trials as a real master on ``db_url`` created them."""
    port = free_port()
    settings = MasterSettings(
        home=home, db_url=db_url, cpu_slots=1, worker_reuse=False, spare_workers=0
    )
    database = make_database(settings)
    orchestrator = Orchestrator(database, settings, master_url=f"http://127.0.0.1:{port}")
    archive = base64.b64encode(make_archive(SLEEPING_MODEL)).decode()
    found: dict[str, list[tuple[int, int, dict[str, Any]]]] = {}
    try:
        with (
            LiveServer(create_app(settings, database=database, orchestrator=orchestrator), port),
            httpx.Client(
                base_url=f"http://127.0.0.1:{port}/api/v1",
                timeout=scaled(30),
                headers=sign_in(database),
            ) as http,
        ):
            ids = {}
            for searcher in searchers():
                body = {"config": config_yaml(searcher), "model_definition": archive}
                response = http.post("/experiments", json=body)
                assert response.status_code == 201, response.text
                ids[searcher] = response.json()["id"]
            for searcher, experiment_id in ids.items():
                count = len(expected_trials(searcher))
                deadline = time.monotonic() + START_TIMEOUT_S
                while True:
                    url = f"/experiments/{experiment_id}/trials"
                    items = http.get(url, params={"limit": 1000}).json()["items"]
                    if len(items) >= count:
                        break
                    assert time.monotonic() < deadline, (searcher, len(items), count)
                    time.sleep(0.1)
                items.sort(key=lambda t: int(t["request_id"]))
                found[searcher] = [(int(t["request_id"]), t["seed"], t["hparams"]) for t in items]
    finally:
        database.dispose()
    return found


def test_each_search_creates_the_same_trials_on_sqlite_and_postgresql(
    tmp_path: Path, postgresql_url: str
) -> None:
    expected = {searcher: expected_trials(searcher) for searcher in searchers()}
    assert len(expected["grid"]) == 8 and len(expected["random"]) == 4
    on_sqlite = search_on(f"sqlite:///{tmp_path / 'pedl.db'}", tmp_path / "sqlite")
    on_postgresql = search_on(postgresql_url, tmp_path / "postgresql")
    assert on_sqlite == expected
    assert on_postgresql == on_sqlite
