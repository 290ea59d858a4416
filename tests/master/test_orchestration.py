"""End to end: a real master process, real trial subprocesses training a tiny Keras model.

One master (2 CPU slots) serves most tests; the crash test has its own. Exactness is checked
the strict way: the final checkpoint's variables are bitwise equal to an undisturbed run's
and the metric rows are exactly the same (none lost, none doubled).
"""

from __future__ import annotations

import os
import random
import time
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import httpx
import pytest

from pedl.storage import TORN_UPLOAD_GRACE_SECONDS
from tests.waits import scaled

from .e2e import (
    MasterProcess,
    create_experiment,
    final_weights,
    logs,
    metric_rows,
    trials,
    wait_for,
    wait_trial,
)

pytestmark = pytest.mark.slow

CONFIG = """
name: {name}
hyperparameters: {hparams}
searcher: {searcher}
scheduling_unit: 10
min_validation_period: {{batches: 10}}
min_checkpoint_period: {{batches: 10}}
max_restarts: {max_restarts}
reproducibility: {{experiment_seed: 3}}
environment:
  environment_variables: {env}
"""
SINGLE = "{name: single, metric: val_accuracy, smaller_is_better: false, max_length: {batches: 40}}"
GRID = "{name: grid, metric: val_accuracy, smaller_is_better: false, max_length: {batches: 40}}"
RANDOM = (
    "{name: random, metric: val_accuracy, smaller_is_better: false, max_trials: 2, "
    "max_length: {batches: 40}}"
)
SINGLE_HP = "{global_batch_size: 16, lr: 0.01}"
GRID_HP = "{global_batch_size: 16, lr: {type: categorical, vals: [0.01, 0.05]}}"
RANDOM_HP = "{global_batch_size: 16, lr: {type: double, minval: 0.001, maxval: 0.1}}"


def config(
    name: str,
    searcher: str = SINGLE,
    hparams: str = SINGLE_HP,
    *,
    env: list[str] | None = None,
    max_restarts: int = 5,
) -> str:
    return CONFIG.format(
        name=name, searcher=searcher, hparams=hparams, env=env or [], max_restarts=max_restarts
    )


@dataclass(frozen=True)
class TrialResult:
    hparams: dict[str, Any]
    weights: bytes
    rows: list[tuple[str, int, dict[str, Any]]]


def results(master: MasterProcess, experiment_id: int) -> list[TrialResult]:
    """Each trial's hparams, final weights and metric rows, in creation order."""
    checkpoints = master.home / "pedl" / "checkpoints"
    out = []
    for trial in trials(master.http, experiment_id):
        assert trial["state"] == "COMPLETED", logs(master.http, trial["id"])
        out.append(
            TrialResult(
                trial["hparams"],
                final_weights(checkpoints, trial),
                metric_rows(master.http, trial["id"]),
            )
        )
    return out


@pytest.fixture(scope="module")
def master(tmp_path_factory: pytest.TempPathFactory) -> Iterator[MasterProcess]:
    process = MasterProcess(tmp_path_factory.mktemp("master")).start()
    try:
        yield process
    finally:
        process.stop()


@pytest.fixture(scope="module")
def reference(master: MasterProcess) -> dict[str, list[TrialResult]]:
    """Undisturbed single, grid and random searches, run side by side on the shared master
    (whose checkpoint storage holds two torn uploads first: see test_retention_...)."""
    plant_torn_uploads(master.home / "pedl" / "checkpoints")
    ids = {
        "single": create_experiment(master.http, config("ref-single")),
        "grid": create_experiment(master.http, config("ref-grid", GRID, GRID_HP)),
        "random": create_experiment(master.http, config("ref-random", RANDOM, RANDOM_HP)),
    }
    for experiment_id in ids.values():
        wait_for(master.http, experiment_id, {"COMPLETED"}, timeout=240, master=master)
    return {name: results(master, experiment_id) for name, experiment_id in ids.items()}


def test_single_grid_random_complete(reference: dict[str, list[TrialResult]]) -> None:
    single, grid, random = reference["single"], reference["grid"], reference["random"]
    assert len(single) == 1
    assert sorted(t.hparams["lr"] for t in grid) == [0.01, 0.05]
    assert len(random) == 2 and random[0].hparams != random[1].hparams
    for trial in [*single, *grid, *random]:
        validations = [b for kind, b, _ in trial.rows if kind == "validation"]
        trainings = [b for kind, b, _ in trial.rows if kind == "training"]
        assert validations == [10, 20, 30, 40]
        assert trainings == [10, 20, 30, 40]
    # Different hyperparameters train to different weights; the same ones to the same.
    assert grid[0].weights != grid[1].weights
    assert single[0].weights == grid[0].weights


def test_retention_deletes_the_checkpoints_no_rule_keeps(
    master: MasterProcess, reference: dict[str, list[TrialResult]]
) -> None:
    """Each reference trial checkpointed at 10, 20, 30 and 40 batches; once it ended, only its
    latest and its best (save_trial_latest: 1, save_trial_best: 1) are left."""
    (single,) = [
        e
        for e in master.http.get("/experiments").json()["items"]
        if e["config"]["name"] == "ref-single"
    ]
    response = master.http.get(f"/experiments/{single['id']}/checkpoints", params={"limit": 1000})
    assert response.status_code == 200, response.text
    by_trial: dict[int, dict[str, list[dict[str, Any]]]] = {}
    for checkpoint in response.json()["items"]:
        states = by_trial.setdefault(checkpoint["trial_id"], {})
        states.setdefault(checkpoint["state"], []).append(checkpoint)
    (states,) = by_trial.values()
    kept, deleted = states["COMPLETED"], states.get("DELETED", [])
    assert 1 <= len(kept) <= 2 and len(kept) + len(deleted) == 4
    assert 40 in [c["total_batches"] for c in kept]
    root = master.home / "pedl" / "checkpoints"
    assert all((root / c["uuid"]).is_dir() for c in kept)
    assert not any((root / c["uuid"]).exists() for c in deleted)
    # That collection also removed the torn upload quiet for longer than the grace period,
    # and left the one written just now (it may be an upload still going on).
    assert not (root / OLD_TORN).exists()
    assert (root / NEW_TORN / "state.bin").is_file()


OLD_TORN = ".tmp-00000000-0000-4000-8000-000000000001-deadbeef"
NEW_TORN = ".tmp-00000000-0000-4000-8000-000000000002-deadbeef"


def plant_torn_uploads(root: Path) -> None:
    """What writers SIGKILLed inside ``store_path`` leave in a shared_fs store: one last
    written longer than the torn-upload grace period ago, one just now."""
    for name in (OLD_TORN, NEW_TORN):
        (root / name).mkdir(parents=True)
        (root / name / "state.bin").write_bytes(b"\0" * 64)
    long_ago = time.time() - TORN_UPLOAD_GRACE_SECONDS - 60
    for path in (root / OLD_TORN / "state.bin", root / OLD_TORN):
        os.utime(path, (long_ago, long_ago))


def test_pause_then_activate_resumes_exactly(
    master: MasterProcess, reference: dict[str, list[TrialResult]]
) -> None:
    http = master.http
    experiment_id = create_experiment(http, config("paused", env=["PEDL_TEST_SLEEP=0.15"]))
    (trial,) = _wait_trials(http, experiment_id, 1)
    wait_trial(http, trial["id"], lambda t: t["total_batches"] >= 10 and t["state"] == "RUNNING")
    assert http.post(f"/experiments/{experiment_id}/pause").status_code == 200
    wait_for(http, experiment_id, {"PAUSED"})
    paused = wait_trial(http, trial["id"], lambda t: t["state"] == "PAUSED")
    assert 10 <= paused["total_batches"] < 40
    assert paused["latest_checkpoint_uuid"]
    time.sleep(1.0)
    assert http.get(f"/trials/{trial['id']}").json()["state"] == "PAUSED"  # stays paused
    assert http.post(f"/experiments/{experiment_id}/activate").status_code == 200
    wait_for(http, experiment_id, {"COMPLETED"}, master=master)
    (result,) = results(master, experiment_id)
    assert result.weights == reference["single"][0].weights
    assert result.rows == reference["single"][0].rows
    text = logs(http, trial["id"])
    assert "resumed from checkpoint" in text and "restarts so far: 0" in text


def test_sigkilled_trial_restarts_exactly_and_kill_stops_now(
    master: MasterProcess, reference: dict[str, list[TrialResult]], tmp_path: Path
) -> None:
    http = master.http
    crashing = create_experiment(
        http,
        config("crash", env=["PEDL_TEST_KILL_AT=15", f"PEDL_TEST_MARKER={tmp_path / 'killed'}"]),
    )
    doomed = create_experiment(http, config("doomed", env=["PEDL_TEST_SLEEP=0.3"]))
    (victim,) = _wait_trials(http, doomed, 1)
    wait_trial(http, victim["id"], lambda t: t["total_batches"] >= 10 and t["state"] == "RUNNING")
    assert http.post(f"/experiments/{doomed}/kill").status_code == 200
    wait_for(http, doomed, {"CANCELED"}, timeout=30, master=master)
    (killed,) = trials(http, doomed)
    assert killed["state"] == "CANCELED"
    assert killed["total_batches"] < 40
    assert "killed" in logs(http, killed["id"])

    wait_for(http, crashing, {"COMPLETED"}, master=master)
    assert (tmp_path / "killed").exists()
    (trial,) = trials(http, crashing)
    assert trial["restarts"] == 1
    text = logs(http, trial["id"])
    assert "signal SIGKILL" in text and "from the checkpoint at batch 10" in text
    (result,) = results(master, crashing)
    assert result.weights == reference["single"][0].weights
    assert result.rows == reference["single"][0].rows


def test_killing_one_trial_leaves_the_rest_of_the_search_running(master: MasterProcess) -> None:
    http = master.http
    grid = create_experiment(http, config("kill-one", GRID, GRID_HP, env=["PEDL_TEST_SLEEP=0.2"]))
    first, second = _wait_trials(http, grid, 2)
    wait_trial(http, first["id"], lambda t: t["state"] == "RUNNING" and t["total_batches"] >= 10)
    response = http.post(f"/trials/{first['id']}/kill")
    assert response.status_code == 202, response.text
    wait_for(http, grid, {"COMPLETED"}, master=master)
    by_id = {t["id"]: t for t in trials(http, grid)}
    assert by_id[first["id"]]["state"] == "CANCELED"
    assert by_id[first["id"]]["total_batches"] < 40
    assert "killing the trial process (trial killed)" in logs(http, first["id"])
    assert by_id[second["id"]]["state"] == "COMPLETED"
    again = http.post(f"/trials/{first['id']}/kill")
    assert again.status_code == 409 and "already ended" in again.json()["error"]["message"]


MASTER_KILL_SEED = 20261123
"""Seeds the moments at which the master is SIGKILLed (the seed is in the failure message)."""


def test_master_sigkilled_at_seeded_random_moments_gives_the_same_results(
    reference: dict[str, list[TrialResult]], tmp_path: Path
) -> None:
    """The master of a random search is SIGKILLed twice, each time once the search has
    reported a number of metric rows drawn from a seeded generator (out of its 16), and
    restarted on the same home and port: the search ends as the undisturbed one did."""
    expected = reference["random"]
    total_rows = sum(len(t.rows) for t in expected)
    rng = random.Random(MASTER_KILL_SEED)
    kill_points = sorted(rng.sample(range(1, total_rows - 1), 2))
    home = tmp_path / "crashing-master"
    master = MasterProcess(home).start()
    experiment_id = create_experiment(
        master.http, config("ref-random", RANDOM, RANDOM_HP, env=["PEDL_TEST_SLEEP=0.1"])
    )
    try:
        for kill_at in kill_points:
            _wait_rows(master, experiment_id, kill_at, f"seed {MASTER_KILL_SEED}: {kill_points}")
            old_pid = master.proc.pid if master.proc else 0
            master.sigkill()
            master.http.close()
            time.sleep(1.0)
            assert not _orphans(old_pid), "trial processes outlived their master"
            again = MasterProcess(home)
            again.port = master.port  # same address, as after a restart
            again.url = master.url
            again.http = httpx.Client(base_url=master.url + "/api/v1", timeout=scaled(30))
            master = again.start()
        wait_for(master.http, experiment_id, {"COMPLETED"}, timeout=240, master=master)
        got = results(master, experiment_id)
    finally:
        master.stop()
    assert [t.hparams for t in got] == [t.hparams for t in expected]
    for mine, theirs in zip(got, expected, strict=True):
        assert mine.weights == theirs.weights, f"seed {MASTER_KILL_SEED}, kills at {kill_points}"
        assert mine.rows == theirs.rows, f"seed {MASTER_KILL_SEED}, kills at {kill_points}"


def _wait_rows(master: MasterProcess, experiment_id: int, count: int, context: str) -> None:
    """Poll until the experiment's trials have reported at least ``count`` metric rows."""
    deadline = time.monotonic() + scaled(120)
    while True:
        found = sum(
            len(metric_rows(master.http, trial["id"]))
            for trial in trials(master.http, experiment_id)
        )
        if found >= count:
            return
        assert time.monotonic() < deadline, f"{context}: {found} of {count} rows\n{master.log()}"
        time.sleep(0.05)


def _wait_trials(http: httpx.Client, experiment_id: int, count: int) -> list[dict[str, Any]]:
    deadline = time.monotonic() + scaled(60)
    while True:
        found = trials(http, experiment_id)
        if len(found) >= count:
            return found
        assert time.monotonic() < deadline, found
        time.sleep(0.1)


def _orphans(master_pid: int) -> list[int]:
    """Processes still carrying ``PEDL_MASTER_PID=<master_pid>`` in their environment."""
    needle = f"PEDL_MASTER_PID={master_pid}".encode()
    found = []
    for entry in Path("/proc").iterdir():
        if not entry.name.isdigit():
            continue
        try:
            environ = (entry / "environ").read_bytes()
        except OSError:
            continue
        if needle in environ.split(b"\0"):
            found.append(int(entry.name))
    return found
