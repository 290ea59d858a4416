"""End to end: a multi-objective adaptive ASHA search (the digits example: validation
accuracy against parameter count) on a real master with real Keras trials; the front in the
REST API and the SDK agree, and checkpoint retention keeps exactly the front's checkpoints."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import pytest

from pedl.client import Client
from tests.accounts import ADMIN, ADMIN_PASSWORD
from tests.waits import scaled

from .e2e import MasterProcess, create_experiment, trials, wait_for

pytestmark = [pytest.mark.slow, pytest.mark.timeout(int(scaled(900)))]

DIGITS = Path(__file__).parents[2] / "examples" / "digits_keras"

CONFIG = """
name: pareto-e2e
data: {validation_fraction: 0.2}
hyperparameters:
  global_batch_size: 32
  learning_rate: {type: log, base: 10, minval: -3, maxval: -2}
  conv_filters: {type: categorical, vals: [4, 32]}
  dense_units: {type: int, minval: 8, maxval: 64}
  dropout: 0.0
records_per_epoch: 1438
searcher:
  name: adaptive_asha
  metrics:
    - {name: val_accuracy, smaller_is_better: false}
    - {name: val_params, smaller_is_better: true}
  max_trials: 3
  max_length: {batches: 8}
  divisor: 2
  max_rungs: 2
  mode: aggressive
  max_concurrent_trials: 2
checkpoint_policy: all
checkpoint_storage: {save_experiment_best: 1, save_trial_latest: 0, save_trial_best: 0}
reproducibility: {experiment_seed: 5}
"""


@pytest.fixture(scope="module")
def master(tmp_path_factory: pytest.TempPathFactory) -> Iterator[MasterProcess]:
    process = MasterProcess(tmp_path_factory.mktemp("master")).start()
    try:
        yield process
    finally:
        process.stop()


def test_the_front_in_the_api_and_sdk_and_its_checkpoints_kept(master: MasterProcess) -> None:
    experiment_id = create_experiment(master.http, CONFIG, model_dir=DIGITS)
    wait_for(master.http, experiment_id, {"COMPLETED"}, timeout=600, master=master)
    assert len(trials(master.http, experiment_id)) == 3

    body = master.http.get(f"/experiments/{experiment_id}/pareto").json()
    assert [o["name"] for o in body["objectives"]] == ["val_accuracy", "val_params"]
    front = [p for p in body["points"] if p["rank"] == 0]
    assert front and body["front"] == [p["trial_id"] for p in front]
    assert all(None not in p["values"] and p["checkpoint_uuid"] for p in front)
    for p in front:  # no trial beats a front trial in both objectives
        acc, params = p["values"]
        assert not any(
            q["values"][0] >= acc and q["values"][1] <= params and q["values"] != p["values"]
            for q in body["points"]
            if None not in q["values"]
        )

    with Client(master.url, ADMIN, ADMIN_PASSWORD) as sdk:
        sdk_front = sdk.get_experiment(experiment_id).pareto_front()
    assert [p.trial_id for p in sdk_front] == body["front"]
    assert [p.values["val_params"] for p in sdk_front] == [p["values"][1] for p in front]

    # Retention kept the front's checkpoints, and only them (save_experiment_best: 1).
    response = master.http.get(
        f"/experiments/{experiment_id}/checkpoints", params={"state": "COMPLETED"}
    )
    kept = {c["uuid"] for c in response.json()["items"]}
    assert kept == {p["checkpoint_uuid"] for p in front}
