"""End to end: population-based training (``pbt``) on a real master with real tiny Keras
trials. A copy starts from its parent's checkpoint at the copied length (its initial
validation scores exactly the parent's weights there), its lineage shows in the REST API and
the SDK; a master SIGKILLed mid-round ends with the same population, lineage and metrics as
an undisturbed run."""

from __future__ import annotations

import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import httpx
import pytest

from pedl.client import Client
from tests.accounts import ADMIN, ADMIN_PASSWORD
from tests.waits import scaled

from .e2e import MasterProcess, create_experiment, logs, metric_rows, trials, wait_for, wait_trial

pytestmark = pytest.mark.slow

CONFIG = """
name: pbt-{name}
hyperparameters:
  global_batch_size: 16
  lr: {{type: log, base: 10, minval: -3, maxval: -0.5}}
searcher:
  name: pbt
  metric: val_accuracy
  smaller_is_better: false
  population_size: 2
  num_rounds: 2
  length_per_round: {{batches: 10}}
  replace_function: {{truncate_fraction: 0.5}}
  explore_function: {{resample_probability: 0.0, perturb_factor: 0.2}}
scheduling_unit: 10
perform_initial_validation: true
reproducibility: {{experiment_seed: 11}}
environment:
  environment_variables: {env}
"""


@pytest.fixture(scope="module")
def master(tmp_path_factory: pytest.TempPathFactory) -> Iterator[MasterProcess]:
    process = MasterProcess(tmp_path_factory.mktemp("master")).start()
    try:
        yield process
    finally:
        process.stop()


def population(master: MasterProcess, experiment_id: int) -> list[dict[str, Any]]:
    """Each trial's identity, lineage and metric rows, in creation order."""
    out = []
    for trial in trials(master.http, experiment_id):
        assert trial["state"] == "COMPLETED", logs(master.http, trial["id"])
        out.append(
            {
                "request_id": trial["request_id"],
                "hparams": trial["hparams"],
                "seed": trial["seed"],
                "parent": trial["parent_trial_id"] and trial["parent_trial_id"] - trial["id"],
                "parent_batches": trial["parent_batches"],
                "changed_hparams": trial["changed_hparams"],
                "rows": metric_rows(master.http, trial["id"]),
            }
        )
    return out


def test_a_copy_starts_from_its_parents_checkpoint_and_shows_its_lineage(
    master: MasterProcess,
) -> None:
    experiment_id = create_experiment(master.http, CONFIG.format(name="ref", env=[]))
    wait_for(master.http, experiment_id, {"COMPLETED"}, timeout=600, master=master)
    first, second, copy = trials(master.http, experiment_id)
    parent = next(t for t in (first, second) if t["id"] == copy["parent_trial_id"])
    assert copy["parent_batches"] == 10
    (lr,) = copy["changed_hparams"]
    assert lr == "lr" and copy["changed_hparams"]["lr"]["from"] == parent["hparams"]["lr"]
    assert copy["changed_hparams"]["lr"]["to"] == copy["hparams"]["lr"] != parent["hparams"]["lr"]
    # The warm start is the parent's checkpoint at batch 10 ...
    response = master.http.get(f"/trials/{parent['id']}/checkpoints")
    at = {c["uuid"]: c["total_batches"] for c in response.json()["items"]}
    assert at.get(copy["warm_start_checkpoint_uuid"]) == 10, (at, copy)
    # ... whose weights the copy starts from: its validation before any training scores
    # exactly what the parent's validation at batch 10 scored.
    parent_rows = metric_rows(master.http, parent["id"])
    copy_rows = metric_rows(master.http, copy["id"])
    (parent_at_10,) = [m for kind, b, m in parent_rows if kind == "validation" and b == 10]
    (copy_at_0,) = [m for kind, b, m in copy_rows if kind == "validation" and b == 0]
    assert copy_at_0 == parent_at_10
    # The best trial went on to batch 20; the worst was closed after round 1.
    assert parent["total_batches"] == 20 and copy["total_batches"] == 10
    other = first if parent is second else second
    assert other["total_batches"] == 10
    # The SDK shows the lineage.
    with Client(master.url, ADMIN, ADMIN_PASSWORD) as sdk:
        lineage = sdk.get_trial(copy["id"]).lineage
    assert lineage is not None and lineage.parent_trial_id == parent["id"]
    assert lineage.parent_checkpoint_uuid == copy["warm_start_checkpoint_uuid"]
    assert lineage.changed_hparams == {"lr": (parent["hparams"]["lr"], copy["hparams"]["lr"])}


def test_a_master_killed_mid_round_ends_with_the_same_population(
    master: MasterProcess, tmp_path: Path
) -> None:
    reference = create_experiment(master.http, CONFIG.format(name="ref2", env=[]))
    wait_for(master.http, reference, {"COMPLETED"}, timeout=600, master=master)
    expected = population(master, reference)

    crashing = MasterProcess(tmp_path / "crashing").start()
    try:
        slow = CONFIG.format(name="ref2", env=["PEDL_TEST_SLEEP=0.1"])
        experiment_id = create_experiment(crashing.http, slow)
        # Killed once the first trial has validated at the end of round 1 (mid-round: the
        # other has not), and again once the copy exists.
        first = _wait_trials(crashing.http, experiment_id, 2)[0]
        wait_trial(crashing.http, first["id"], lambda t: t["total_batches"] >= 10, timeout=300)
        crashing = _restart(crashing)
        _wait_trials(crashing.http, experiment_id, 3)
        crashing = _restart(crashing)
        wait_for(crashing.http, experiment_id, {"COMPLETED"}, timeout=600, master=crashing)
        got = population(crashing, experiment_id)
    finally:
        crashing.stop()
    assert crashing.log().count("PEDL master listening") == 3
    assert got == expected


def _wait_trials(http: httpx.Client, experiment_id: int, n: int) -> list[dict[str, Any]]:
    deadline = time.monotonic() + scaled(300)
    while True:
        found = trials(http, experiment_id)
        if len(found) >= n:
            return found
        assert time.monotonic() < deadline, found
        time.sleep(0.2)


def _restart(master: MasterProcess) -> MasterProcess:
    """SIGKILL the master and start it again on the same home and address."""
    master.sigkill()
    master.http.close()
    time.sleep(1.0)
    again = MasterProcess(master.home)
    again.port, again.url = master.port, master.url
    again.http = httpx.Client(base_url=master.url + "/api/v1", timeout=scaled(30))
    return again.start()
