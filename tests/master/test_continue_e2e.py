"""``det experiment continue`` on a real master: an ended single-trial experiment trains on
from its trial's latest checkpoint to a longer ``max_length``, then completes again; a random
search killed mid-run, continued with ``pedl experiment continue``, reruns only its unfinished
trials (SQLite and PostgreSQL)."""

from __future__ import annotations

import time
from pathlib import Path
from typing import Any

import pytest
from click.testing import CliRunner

from pedl.cli import cli
from tests.master.e2e import (
    MasterProcess,
    create_experiment,
    logs,
    metric_rows,
    trials,
    wait_for,
    wait_trial,
)
from tests.waits import scaled

pytestmark = pytest.mark.slow

CONFIG = """
name: continued
hyperparameters: {global_batch_size: 16, lr: 0.05}
searcher: {name: single, metric: val_accuracy, smaller_is_better: false,
           max_length: {batches: 10}}
scheduling_unit: 10
min_validation_period: {batches: 10}
reproducibility: {experiment_seed: 3}
"""


def test_continue_trains_on_from_the_latest_checkpoint(
    tmp_path_factory: pytest.TempPathFactory,
) -> None:
    master = MasterProcess(tmp_path_factory.mktemp("master"), cpu_slots=1).start()
    try:
        experiment_id = create_experiment(master.http, CONFIG)
        wait_for(master.http, experiment_id, {"COMPLETED"}, timeout=180, master=master)
        (trial,) = trials(master.http, experiment_id)
        assert trial["total_batches"] == 10
        override = "searcher:\n  max_length: {batches: 20}\n"
        answer = master.http.post(
            f"/experiments/{experiment_id}/continue", json={"config": override}
        )
        assert answer.status_code == 200, answer.text
        assert answer.json()["state"] == "ACTIVE"
        wait_for(master.http, experiment_id, {"COMPLETED"}, timeout=180, master=master)
        (trial,) = trials(master.http, experiment_id)
        assert trial["state"] == "COMPLETED" and trial["total_batches"] == 20
        text = logs(master.http, trial["id"])
        assert "starting the trial process from the checkpoint at batch 10" in text, text
        validated = sorted(
            b for kind, b, _ in metric_rows(master.http, trial["id"]) if kind == "validation"
        )
        assert validated[-1] == 20, validated
    finally:
        master.stop()


RANDOM = """
name: continued-random
hyperparameters: {global_batch_size: 16, lr: {type: double, minval: 0.01, maxval: 0.1}}
searcher: {name: random, metric: val_accuracy, smaller_is_better: false, max_trials: 3,
           max_concurrent_trials: 1, max_length: {batches: 20}}
scheduling_unit: 5
min_validation_period: {batches: 20}
min_checkpoint_period: {batches: 5}
reproducibility: {experiment_seed: 11}
environment:
  environment_variables: [PEDL_TEST_SLEEP=0.3]
"""


def test_a_killed_random_search_continued_reruns_only_its_unfinished_trials(
    fresh_db_url: str, tmp_path: Path
) -> None:
    master = MasterProcess(tmp_path / "master", cpu_slots=1, env={"PEDL_DB_URL": fresh_db_url})
    master.start()
    try:
        http = master.http
        experiment_id = create_experiment(http, RANDOM)
        first = wait_trial_of(http, experiment_id, request_id="1")
        wait_trial(http, first["id"], lambda t: t["state"] == "COMPLETED")
        second = wait_trial_of(http, experiment_id, request_id="2")
        wait_trial(
            http,
            second["id"],
            lambda t: t["state"] == "RUNNING" and t["latest_checkpoint_uuid"] is not None,
        )
        assert http.post(f"/experiments/{experiment_id}/kill").status_code == 200
        wait_for(http, experiment_id, {"CANCELED"}, timeout=60, master=master)
        before = {t["id"]: t for t in trials(http, experiment_id)}
        assert before[first["id"]]["state"] == "COMPLETED"
        assert before[second["id"]]["state"] == "CANCELED"
        resumed_at = before[second["id"]]["total_batches"]
        assert 0 < resumed_at < 20
        first_log = logs(http, first["id"])

        result = CliRunner().invoke(
            cli, ["--master", master.url, "experiment", "continue", str(experiment_id)]
        )
        assert result.exit_code == 0 and "Continued experiment" in result.output, result.output
        wait_for(http, experiment_id, {"COMPLETED"}, timeout=300, master=master)
        after = {t["id"]: t for t in trials(http, experiment_id)}
        assert len(after) == 3 and sorted(t["request_id"] for t in after.values()) == [
            "1",
            "2",
            "3",
        ]
        for trial_id, old in before.items():  # the same trials, with their hyperparameters
            assert (after[trial_id]["request_id"], after[trial_id]["hparams"]) == (
                old["request_id"],
                old["hparams"],
            )
        assert {t["state"] for t in after.values()} == {"COMPLETED"}
        assert all(t["restarts"] == 0 and t["total_batches"] == 20 for t in after.values())
        assert logs(http, first["id"]) == first_log  # answered from its record, not rerun
        text = logs(http, second["id"])
        assert "starting the trial process from the checkpoint at batch" in text, text
        progress = http.get(f"/experiments/{experiment_id}").json()["progress"]
        assert progress == 1.0
    finally:
        master.stop()


def wait_trial_of(http: Any, experiment_id: int, *, request_id: str) -> dict[str, Any]:
    """The experiment's trial of ``request_id``, once the searcher has created it."""
    deadline = time.monotonic() + scaled(120)
    while time.monotonic() < deadline:
        for trial in trials(http, experiment_id):
            if trial["request_id"] == request_id:
                return trial
        time.sleep(0.2)
    raise AssertionError(f"no trial of request {request_id}: {trials(http, experiment_id)}")
