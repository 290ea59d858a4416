"""A grid over ``MAX_GRID_POINTS`` that reached the database before the limit existed (the API
refuses it now) must not hang the master that adopts it: the experiment ends in ERROR with a
message naming the limit, without the grid being enumerated."""

from __future__ import annotations

import time
from pathlib import Path
from typing import Any

import pytest
import yaml

from pedl.config import MAX_GRID_POINTS, ConfigError, ExperimentConfig, parse_config
from pedl.db import Database
from pedl.db import experiments as experiments_repo
from pedl.searcher import SearcherError, make_search_method
from tests.master.e2e import MasterProcess, wait_for
from tests.master.helpers import CONFIG_YAML, make_archive

HUGE_GRID = CONFIG_YAML.replace("name: single", "name: grid").replace(
    "layers: {type: int, minval: 1, maxval: 4}",
    "layers: {type: int, minval: 1, maxval: 1000000, count: 1000000}\n"
    "  dropout: {type: double, minval: 0, maxval: 1, count: 1000000}",
)


def _huge_grid() -> dict[str, Any]:
    document: dict[str, Any] = yaml.safe_load(HUGE_GRID)
    return document


def test_the_searcher_refuses_a_grid_over_the_limit_without_building_it() -> None:
    config = ExperimentConfig.model_validate(_huge_grid())  # skips parse_config's checks
    started = time.monotonic()
    with pytest.raises(SearcherError, match=f"more than the limit of {MAX_GRID_POINTS:,}"):
        make_search_method(config)
    assert time.monotonic() - started < 5


@pytest.mark.slow
def test_a_stored_grid_over_the_limit_ends_in_error_when_the_master_starts(
    tmp_path: Path,
) -> None:
    with pytest.raises(ConfigError, match="1,000,000,000,000 points"):
        parse_config(_huge_grid())  # what the API answers 422 with
    home = tmp_path / "home"
    (home / "pedl").mkdir(parents=True)
    database = Database(f"sqlite:///{home / 'pedl' / 'pedl.db'}")  # the master's default
    try:
        database.upgrade()
        with database.session(write=True) as session:
            experiment_id = experiments_repo.create_experiment(
                session,
                config=_huge_grid(),
                config_text=HUGE_GRID,
                model_definition=make_archive(),
                owner="admin",
                name="mnist",
                searcher_metric="val_loss",
            ).id
    finally:
        database.dispose()
    master = MasterProcess(home, cpu_slots=1, env={"PEDL_READ_PROCESSES": "0"}).start()
    try:
        body = wait_for(master.http, experiment_id, {"ERROR"}, timeout=60, master=master)
        assert "1,000,000,000,000 points" in body["error"], body["error"]
        assert f"the limit of {MAX_GRID_POINTS:,}" in body["error"], body["error"]
        assert master.http.get("/experiments").status_code == 200
    finally:
        master.stop()
