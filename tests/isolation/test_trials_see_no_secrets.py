"""A real master on PostgreSQL, whose database URL carries a password, runs two trials at once
(in warm workers, the default; trial processes get the same environment and their token over
a socket, ``test_trial_processes.py``); each trial's model code (``snoop_model``)
searches everything it can read for the database password, the admin password and the other
trial's token: its environment and command line, ``/proc`` of its parent (the master) and of
every process it can read, and the files under its temporary directory, its working directory
and its home. It finds none of them. One trial SIGKILLs itself: its private temporary
directory is gone once the master has reaped it.

The test runs as root in CI, where every ``/proc/<pid>/environ`` is readable: what it checks
there is what the design promises, that none of them holds these secrets (the master's own
start environment is overwritten, ``pedl.master.rm._isolation.protect_master_process``). Root
could still read any process's memory; the README says so.
"""

from __future__ import annotations

import json
import os
import secrets
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from tests.master.conftest import _create_pg_database, _drop_pg_database
from tests.master.e2e import MasterProcess, create_experiment, experiment, logs, trials, wait_for

pytestmark = pytest.mark.slow

MODEL_DIR = Path(__file__).parent / "snoop_model"
API_KEY = "experiment-own-api-key-" + secrets.token_hex(4)
CONFIG = """
name: isolation
hyperparameters:
  global_batch_size: 16
  victim: {{type: categorical, vals: [false, true]}}
searcher:
  name: grid
  metric: val_loss
  max_length: {{batches: 2}}
max_restarts: 1
environment:
  environment_variables: ["SNOOP_DIR={snoop}", "SNOOP_TRIALS=2", "MY_API_KEY={api_key}"]
"""
OWN_PLACES = ("os.environ", "/proc/self/", "/proc/<parent>/", "file:")
"""Where the fixed admin password of every test master must not be found: the trial's own
environment, command line, its parent's, and files (other test runs on this machine use the
same admin password, so other processes' /proc entries are not searched for it)."""


def needles(database_password: str) -> dict[str, str]:
    """The master's secrets to look for: the database password, and the admin password the
    test masters get from the tests' environment (``PEDL_ADMIN_PASSWORD``), if any."""
    found = {"database password": database_password}
    if admin := os.environ.get("PEDL_ADMIN_PASSWORD"):
        found["admin password"] = admin
    return found


class Run:
    def __init__(self, master: MasterProcess, experiment_id: int, snoop: Path) -> None:
        self.master = master
        self.experiment_id = experiment_id
        self.snoop = snoop
        self.reports = {
            int(p.stem.removeprefix("report-")): json.loads(p.read_text())
            for p in snoop.glob("report-*.json")
        }


@pytest.fixture(scope="module")
def run(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Run]:
    root = tmp_path_factory.mktemp("isolation")
    snoop, master_tmp = root / "snoop", root / "tmp"
    snoop.mkdir()
    master_tmp.mkdir()
    password = secrets.token_hex(16)
    (snoop / "needles.json").write_text(json.dumps(needles(password)))
    name, url = _create_pg_database()
    master = MasterProcess(
        root / "home",
        cpu_slots=2,
        env={
            # lower case: read by the master's settings like PEDL_DB_URL (case-insensitive),
            # which MasterProcess drops from the test's own environment
            "pedl_db_url": url.replace("postgres@", f"postgres:{password}@"),
            "TMPDIR": str(master_tmp),
        },
    )
    try:
        master.start()
        config = CONFIG.format(snoop=snoop, api_key=API_KEY)
        experiment_id = create_experiment(master.http, config, MODEL_DIR)
        wait_for(master.http, experiment_id, {"COMPLETED"}, timeout=300, master=master)
        yield Run(master, experiment_id, snoop)
    finally:
        master.stop()
        _drop_pg_database(name)
    assert password not in master.log(), "the master printed the database password"
    left = [p.name for p in master_tmp.iterdir()]
    assert left == [], f"temporary directories left after the master stopped: {left}"


def test_each_trial_searched_while_the_other_ran(run: Run) -> None:
    assert len(run.reports) == 2
    for trial_id, report in run.reports.items():
        others = [f"token of trial {t}" for t in run.reports if t != trial_id]
        assert report["searched_for"] == sorted([*needles(""), *others])


def test_no_trial_finds_a_secret_of_the_master_or_of_another_trial(run: Run) -> None:
    for trial_id, report in run.reports.items():
        found = [
            (where, what)
            for where, what in report["found"]
            if what != "admin password" or where.startswith(OWN_PLACES)
        ]
        assert found == [], f"trial {trial_id} found {found}"
        assert report["token_variables"] == [], "a token reached the environment"


def test_the_master_s_environment_is_unreadable_or_holds_nothing(run: Run) -> None:
    # As another user than root, the master (non-dumpable) hides /proc/<pid>/environ; root
    # reads it, and finds nothing (previous test): its secrets there are overwritten.
    for report in run.reports.values():
        hidden = any(
            u.startswith(f"/proc/{report['parent']}/environ") for u in report["unreadable"]
        )
        assert hidden == (os.geteuid() != 0)


def test_a_sigkilled_trial_leaves_no_private_directory(run: Run) -> None:
    killed = list(run.snoop.glob("killed-*"))
    assert len(killed) == 1
    tmpdir = Path(killed[0].read_text())
    assert tmpdir.name.startswith("pedl-trial-")
    assert not tmpdir.exists()
    for report in run.reports.values():
        assert report["tmpdir_mode"] == 0o700
    victim = int(killed[0].name.removeprefix("killed-"))
    assert any(
        t["id"] == victim and t["restarts"] == 1 for t in trials(run.master.http, run.experiment_id)
    )


def test_the_config_shows_the_experiment_s_secret_masked(run: Run) -> None:
    assert [r["api_key"] for r in run.reports.values()] == [API_KEY, API_KEY]  # trials get it
    shown: dict[str, Any] = experiment(run.master.http, run.experiment_id)["config"]
    variables = shown["environment"]["environment_variables"]
    assert "MY_API_KEY=********" in variables and API_KEY not in json.dumps(shown)
    listed = run.master.http.get("/experiments").json()
    assert API_KEY not in json.dumps(listed)
    for trial in trials(run.master.http, run.experiment_id):
        assert API_KEY not in logs(run.master.http, trial["id"])


def test_checkpoints_keep_the_experiment_s_secret_masked(run: Run) -> None:
    """A checkpoint's metadata.json, which everyone who may read the checkpoint downloads,
    holds the experiment's config with its secret masked."""
    found = sorted((run.master.home / "pedl" / "checkpoints").glob("*/metadata.json"))
    assert len(found) >= 2, found  # one per trial at least
    for path in found:
        text = path.read_text()
        assert API_KEY not in text, path
        variables = json.loads(text)["experiment_config"]["environment"]["environment_variables"]
        assert "MY_API_KEY=********" in variables
