"""Trials through the SDK: records, metrics, logs (paged and followed), best checkpoint."""

from __future__ import annotations

import math
import threading
import time
from pathlib import Path

import pytest

from pedl.client import Client, Experiment, PEDLError, Trial
from pedl.vocabulary import TrialState

from .helpers import LiveMaster, report, store_checkpoint


@pytest.fixture
def experiment(client: Client, config_file: Path, model_dir: Path) -> Experiment:
    return client.create_experiment(config_file, model_dir)


def test_list_and_get_trials(client: Client, master: LiveMaster, experiment: Experiment) -> None:
    first, _ = master.create_trial(experiment.id, lr=0.1)
    second, _ = master.create_trial(experiment.id, lr=0.2)
    master.set_trial_state(second, TrialState.RUNNING)
    trials = experiment.list_trials()
    assert [t.id for t in trials] == [first, second]
    assert [t.hparams for t in trials] == [{"lr": 0.1}, {"lr": 0.2}]
    assert [t.id for t in experiment.list_trials(states=("RUNNING",))] == [second]
    trial = client.get_trial(second)
    assert (trial.experiment_id, trial.state, trial.seed) == (experiment.id, "RUNNING", 3)
    assert not trial.is_terminal
    master.set_trial_state(second, TrialState.COMPLETED)
    assert trial.reload().state == "COMPLETED" and trial.is_terminal


def test_metrics_by_kind_with_non_finite_values(
    client: Client, master: LiveMaster, experiment: Experiment
) -> None:
    trial_id, token = master.create_trial(experiment.id)
    with master.trial_api(token) as api:
        for batches in (10, 20, 30):
            report(api, trial_id, "training", batches, loss=1.0 / batches)
        report(api, trial_id, "validation", 30, val_loss=0.5, weird="NaN", huge="-Infinity")
    trial = client.get_trial(trial_id)
    rows = trial.metrics()
    assert [(r.kind, r.total_batches) for r in rows] == [
        ("training", 10),
        ("training", 20),
        ("training", 30),
        ("validation", 30),
    ]
    assert rows[0].metrics == {"loss": 0.1}
    (validation,) = trial.metrics("validation")
    assert validation.metrics["val_loss"] == 0.5
    weird, huge = validation.metrics["weird"], validation.metrics["huge"]
    assert isinstance(weird, float) and math.isnan(weird)
    assert huge == -math.inf
    # Paging by a tiny page size gives the same rows.
    assert [r.total_batches for r in trial.metrics("training", page_size=2)] == [10, 20, 30]


def test_logs_paged_in_seq_order(
    client: Client, master: LiveMaster, experiment: Experiment
) -> None:
    trial_id, token = master.create_trial(experiment.id)
    lines = [{"seq": seq, "message": f"line {seq}"} for seq in range(7)]
    with master.trial_api(token) as api:
        assert api.post(f"/trials/{trial_id}/logs", json={"lines": lines}).status_code == 200
    trial = client.get_trial(trial_id)
    assert [line.message for line in trial.logs(page_size=3)] == [f"line {i}" for i in range(7)]
    assert [line.seq for line in trial.logs(after_seq=4)] == [5, 6]


def test_logs_follow_until_the_trial_ends(
    client: Client, master: LiveMaster, experiment: Experiment
) -> None:
    trial_id, token = master.create_trial(experiment.id)
    master.set_trial_state(trial_id, TrialState.RUNNING)

    def trial_process() -> None:
        with master.trial_api(token) as api:
            for seq in range(3):
                time.sleep(0.1)
                api.post(f"/trials/{trial_id}/logs", json={"lines": [{"seq": seq, "message": "m"}]})
        master.set_trial_state(trial_id, TrialState.COMPLETED)

    thread = threading.Thread(target=trial_process)
    thread.start()
    try:
        followed = [
            line.seq for line in client.get_trial(trial_id).logs(follow=True, interval=0.05)
        ]
    finally:
        thread.join()
    assert followed == [0, 1, 2]


def test_trial_top_checkpoint_uses_the_searcher_metric(
    client: Client, master: LiveMaster, experiment: Experiment, storage: Path
) -> None:
    trial_id, token = master.create_trial(experiment.id)
    trial = client.get_trial(trial_id)
    assert trial.top_checkpoint() is None
    with master.trial_api(token) as api:
        uuids = {}
        for batches, val_loss, acc in ((10, 0.9, 0.7), (20, 0.3, 0.6), (30, 0.5, 0.8)):
            report(api, trial_id, "validation", batches, val_loss=val_loss, acc=acc)
            uuids[batches] = store_checkpoint(api, trial_id, storage, batches, {"w": b"1"})
        unvalidated = store_checkpoint(api, trial_id, storage, 40, {"w": b"2"})
    best = trial.top_checkpoint()
    assert best is not None and best.uuid == uuids[20] and best.metric("val_loss") == 0.3
    assert trial.reload().best_checkpoint_uuid == uuids[20]
    by_acc = trial.top_checkpoint(sort_by="acc", smaller_is_better=False)
    assert by_acc is not None and by_acc.uuid == uuids[30]
    worst = trial.top_checkpoint(sort_by="val_loss", smaller_is_better=False)
    assert worst is not None and worst.uuid == uuids[10]
    listed = [c.uuid for c in trial.list_checkpoints()]
    assert listed == [uuids[10], uuids[20], uuids[30], unvalidated]


def test_trial_kill_on_an_api_only_master_says_why_it_cannot(
    client: Client, master: LiveMaster, experiment: Experiment
) -> None:
    trial_id, _ = master.create_trial(experiment.id)
    trial = client.get_trial(trial_id)
    with pytest.raises(PEDLError) as info:
        trial.kill()
    assert info.value.status_code == 409
    assert "runs no orchestrator" in info.value.message


def test_trial_handles_are_plain_snapshots(master: LiveMaster, experiment: Experiment) -> None:
    trial_id, _ = master.create_trial(experiment.id)
    (trial,) = experiment.list_trials()
    assert isinstance(trial, Trial) and trial.id == trial_id
    assert repr(trial) == f"Trial(id={trial_id}, experiment_id={experiment.id}, state='ACTIVE')"
