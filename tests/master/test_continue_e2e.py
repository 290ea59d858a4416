"""``det experiment continue`` on a real master: an ended single-trial experiment trains on
from its trial's latest checkpoint to a longer ``max_length``, then completes again."""

from __future__ import annotations

import pytest

from tests.master.e2e import (
    MasterProcess,
    create_experiment,
    logs,
    metric_rows,
    trials,
    wait_for,
)

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
