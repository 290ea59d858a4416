"""End to end: a TPE search on a real master, SIGKILLed mid-search and restarted, ends with the
same trials (request ids, hyperparameters, seeds), the same final weights and the same metric
rows as an undisturbed run with the same seed."""

from __future__ import annotations

import time
from pathlib import Path
from typing import Any

import httpx
import pytest

import pedl.searcher
from pedl.searcher import missing_optuna_requirements
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

pytestmark = [
    pytest.mark.slow,
    pytest.mark.skipif(
        "tpe" not in pedl.searcher.RUNNABLE_SEARCHERS,
        reason="the tpe searcher is not registered in pedl.searcher._factory yet "
        "(its builder is pedl.searcher.tpe_from_config)",
    ),
    pytest.mark.skipif(
        missing_optuna_requirements("tpe") is not None,
        reason=str(missing_optuna_requirements("tpe")),
    ),
]

# Trials 1 and 2 are random draws; trial 3 is drawn knowing trial 1's metric, trial 4 knowing
# those of trials 1 and 2 (two at a time: see OptunaSearch).
CONFIG = """
name: tpe-{name}
hyperparameters:
  global_batch_size: 16
  lr: {{type: log, base: 10, minval: -3, maxval: -0.5}}
searcher:
  name: tpe
  metric: val_accuracy
  smaller_is_better: false
  max_trials: 4
  max_concurrent_trials: 2
  n_startup_trials: 1
  max_length: {{batches: 40}}
scheduling_unit: 10
min_validation_period: {{batches: 10}}
min_checkpoint_period: {{batches: 10}}
reproducibility: {{experiment_seed: 5}}
environment:
  environment_variables: {env}
"""


def results(master: MasterProcess, experiment_id: int) -> list[dict[str, Any]]:
    """Each trial's identity, final weights and metric rows, in creation order."""
    checkpoints = master.home / "pedl" / "checkpoints"
    out = []
    for trial in trials(master.http, experiment_id):
        assert trial["state"] == "COMPLETED", logs(master.http, trial["id"])
        out.append(
            {
                "request_id": trial["request_id"],
                "hparams": trial["hparams"],
                "seed": trial["seed"],
                "weights": final_weights(checkpoints, trial),
                "rows": metric_rows(master.http, trial["id"]),
            }
        )
    return out


def test_tpe_search_killed_mid_search_ends_as_an_undisturbed_one(tmp_path: Path) -> None:
    undisturbed = MasterProcess(tmp_path / "undisturbed").start()
    try:
        experiment_id = create_experiment(undisturbed.http, CONFIG.format(name="ref", env=[]))
        wait_for(undisturbed.http, experiment_id, {"COMPLETED"}, timeout=400, master=undisturbed)
        expected = results(undisturbed, experiment_id)
    finally:
        undisturbed.stop()
    assert len(expected) == 4
    assert len({t["hparams"]["lr"] for t in expected}) == 4
    for trial in expected:
        assert [b for kind, b, _ in trial["rows"] if kind == "validation"] == [10, 20, 30, 40]

    home = tmp_path / "crashing"
    master = MasterProcess(home).start()
    try:
        # Slower training (not different numbers), so that the kills land mid-search.
        slow = CONFIG.format(name="ref", env=["PEDL_TEST_SLEEP=0.1"])
        experiment_id = create_experiment(master.http, slow)
        # Killed while the first two (random) trials train: every TPE draw comes after a
        # restart, from a study rebuilt by replaying the searcher's events.
        first = _wait_trials(master.http, experiment_id, 2)[0]
        _checkpointed(master, first["id"])
        master = _restart(master)
        # Killed again once trial 3, drawn from trial 1's metric, has trained.
        third = _wait_trials(master.http, experiment_id, 3)[2]
        _checkpointed(master, third["id"])
        master = _restart(master)
        wait_for(master.http, experiment_id, {"COMPLETED"}, timeout=400, master=master)
        got = results(master, experiment_id)
    finally:
        master.stop()
    assert master.log().count("PEDL master listening") == 3  # started, restarted twice
    assert [t["hparams"] for t in got] == [t["hparams"] for t in expected]
    assert [(t["request_id"], t["seed"]) for t in got] == [
        (t["request_id"], t["seed"]) for t in expected
    ]
    for mine, theirs in zip(got, expected, strict=True):
        assert mine["rows"] == theirs["rows"]
        assert mine["weights"] == theirs["weights"]


def _checkpointed(master: MasterProcess, trial_id: int) -> None:
    wait_trial(
        master.http, trial_id, lambda t: t["latest_checkpoint_uuid"] is not None, timeout=300
    )


def _restart(master: MasterProcess) -> MasterProcess:
    """SIGKILL the master and start it again on the same home and address."""
    master.sigkill()
    master.http.close()
    time.sleep(1.0)
    again = MasterProcess(master.home)
    again.port, again.url = master.port, master.url  # same address, as after a restart
    again.http = httpx.Client(base_url=master.url + "/api/v1", timeout=scaled(30))
    return again.start()


def _wait_trials(http: httpx.Client, experiment_id: int, count: int) -> list[dict[str, Any]]:
    deadline = time.monotonic() + scaled(300)
    while True:
        found = trials(http, experiment_id)
        if len(found) >= count:
            return found
        assert time.monotonic() < deadline, found
        time.sleep(0.1)
