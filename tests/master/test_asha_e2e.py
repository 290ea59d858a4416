"""End to end: an ASHA search on a real master, real trial processes training the tiny
Keras model.

The search: async_halving, 4 trials, divisor 2, rungs at 20 and 40 batches, one trial at a
time, experiment seed 22 (whose draws give trial 1 a learning rate 300 times trial 2's).
Trial 1 reports at 20 and waits: trial 2 is queued (one trial at a time), so trial 1's
process checkpoints and exits, giving up its slot. Trial 2's worse result promotes trial 1,
which is started again from its checkpoint at batch 20 and trains on to 40. A promoted
trial is checked against an uninterrupted ``single`` run of the same hyperparameters and
seed: the same metric rows and, bit for bit, the same final weights.
"""

from __future__ import annotations

import re
import time
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import httpx
import pytest

from tests.waits import scaled

from .e2e import (
    MasterProcess,
    create_experiment,
    experiment,
    final_weights,
    logs,
    metric_rows,
    trials,
    wait_for,
    wait_trial,
)

pytestmark = pytest.mark.slow

SEED = 22
ASHA = """
name: {name}
hyperparameters:
  global_batch_size: 16
  lr: {{type: log, base: 10, minval: -4, maxval: -1}}
searcher:
  name: async_halving
  metric: val_accuracy
  smaller_is_better: false
  num_rungs: 2
  divisor: 2
  max_trials: 4
  max_concurrent_trials: 1
  max_length: {{batches: 40}}
scheduling_unit: 10
min_validation_period: {{batches: 10}}
min_checkpoint_period: {{batches: 10}}
reproducibility: {{experiment_seed: {seed}}}
environment:
  environment_variables: {env}
"""
SINGLE = """
name: asha-trial-1-uninterrupted
hyperparameters: {{global_batch_size: 16, lr: {lr!r}}}
searcher: {{name: single, metric: val_accuracy, smaller_is_better: false,
  max_length: {{batches: 40}}}}
scheduling_unit: 10
min_validation_period: {{batches: 10}}
min_checkpoint_period: {{batches: 10}}
reproducibility: {{experiment_seed: {seed}}}
"""


def asha(name: str, env: list[str] | None = None) -> str:
    return ASHA.format(name=name, seed=SEED, env=env or [])


@dataclass(frozen=True)
class TrialResult:
    trial_id: int
    hparams: dict[str, Any]
    state: str
    total_batches: int
    weights: bytes
    rows: list[tuple[str, int, dict[str, Any]]]
    log: str


def results(master: MasterProcess, experiment_id: int) -> list[TrialResult]:
    """Each trial's outcome, weights, metric rows and log, in creation order."""
    checkpoints = master.home / "pedl" / "checkpoints"
    return [
        TrialResult(
            trial["id"],
            trial["hparams"],
            trial["state"],
            trial["total_batches"],
            final_weights(checkpoints, trial),
            metric_rows(master.http, trial["id"]),
            logs(master.http, trial["id"]),
        )
        for trial in trials(master.http, experiment_id)
    ]


def batches(result: TrialResult, kind: str) -> list[int]:
    return [b for k, b, _ in result.rows if k == kind]


@dataclass(frozen=True)
class Reference:
    asha: list[TrialResult]
    single: TrialResult
    checkpoints: list[dict[str, Any]]


@pytest.fixture(scope="module")
def reference(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Reference]:
    """The undisturbed ASHA search and, beside it, trial 1's hyperparameters and seed run
    uninterrupted by the single searcher."""
    master = MasterProcess(tmp_path_factory.mktemp("asha-master")).start()
    try:
        search = create_experiment(master.http, asha("asha-reference"))
        first = _wait_trials(master.http, search, 1)[0]  # the searcher drew its lr
        single = create_experiment(master.http, SINGLE.format(lr=first["hparams"]["lr"], seed=SEED))
        wait_for(master.http, search, {"COMPLETED"}, timeout=240, master=master)
        wait_for(master.http, single, {"COMPLETED"}, timeout=240, master=master)
        response = master.http.get(f"/experiments/{search}/checkpoints", params={"limit": 1000})
        assert response.status_code == 200, response.text
        yield Reference(
            results(master, search), results(master, single)[0], response.json()["items"]
        )
    finally:
        master.stop()


def test_promoted_trials_continue_from_their_checkpoints(reference: Reference) -> None:
    search = reference.asha
    assert len(search) == 4
    assert all(t.state == "COMPLETED" for t in search)
    promoted = [t for t in search if batches(t, "validation")[-1:] == [40]]
    stopped = [t for t in search if t not in promoted]
    # rung 0 of 4 results: floor(4/2) = 2 trials promoted; the other 2 closed at 20 batches
    assert len(promoted) == 2 and len(stopped) == 2
    first = search[0]
    assert first in promoted, "precondition: trial 1 beats trial 2 at 20 batches"
    assert first.hparams["lr"] > 100 * search[1].hparams["lr"]
    for trial in stopped:
        assert batches(trial, "validation") == batches(trial, "training") == [10, 20]
        assert trial.total_batches == 20
    # Promoted trials' batch counters continue: 30 and 40 follow 20, nothing trained twice.
    for trial in promoted:
        assert batches(trial, "validation") == batches(trial, "training") == [10, 20, 30, 40]
        assert trial.total_batches == 40
    # Trial 1 waited at rung 0 with no process and was started again from its checkpoint at
    # batch 20 (the one it stored when it reached the rung) ...
    text = first.log
    assert "starting the trial process from scratch" in text
    assert "starting the trial process from the checkpoint at batch 20" in text
    resumed = re.findall(r"resumed from checkpoint (\S+) at batch 20", text)
    mine = {c["uuid"]: c for c in reference.checkpoints if c["trial_id"] == first.trial_id}
    assert len(resumed) == 1 and resumed[0] in mine
    assert mine[resumed[0]]["total_batches"] == 20
    # ... with exactly that checkpoint's state: its rows and final weights are those of the
    # same trial trained 0 -> 40 in one go.
    assert first.hparams == reference.single.hparams
    assert first.rows == reference.single.rows
    assert first.weights == reference.single.weights
    assert "from the checkpoint" not in reference.single.log


def test_master_sigkilled_mid_search_ends_like_the_undisturbed_run(
    reference: Reference, tmp_path: Path
) -> None:
    home = tmp_path / "crashing-master"
    first = MasterProcess(home).start()
    experiment_id = create_experiment(first.http, asha("asha-reference", ["PEDL_TEST_SLEEP=0.05"]))
    # Mid-search: trial 1 waits at rung 0 and trial 2 has trained past its first checkpoint.
    second_trial = _wait_trials(first.http, experiment_id, 2)[1]
    wait_trial(first.http, second_trial["id"], lambda t: t["latest_checkpoint_uuid"] is not None)
    assert experiment(first.http, experiment_id)["state"] == "ACTIVE"
    assert len(trials(first.http, experiment_id)) < 4  # rung 0 is not complete yet
    first.sigkill()
    first.http.close()
    time.sleep(1.0)

    again = MasterProcess(home)
    again.port = first.port  # same address, as after a restart
    again.url = first.url
    again.http = httpx.Client(base_url=first.url + "/api/v1", timeout=scaled(30))
    again.start()
    try:
        wait_for(again.http, experiment_id, {"COMPLETED"}, timeout=240, master=again)
        got = results(again, experiment_id)
    finally:
        again.stop()
    assert [t.hparams for t in got] == [t.hparams for t in reference.asha]
    assert [t.state for t in got] == [t.state for t in reference.asha]
    for mine, theirs in zip(got, reference.asha, strict=True):
        assert mine.total_batches == theirs.total_batches  # the same promotions
        assert mine.rows == theirs.rows  # the same metrics, none lost or doubled
        assert mine.weights == theirs.weights


def _wait_trials(http: httpx.Client, experiment_id: int, count: int) -> list[dict[str, Any]]:
    deadline = time.monotonic() + scaled(120)
    while True:
        found = trials(http, experiment_id)
        if len(found) >= count:
            return found
        assert time.monotonic() < deadline, found
        time.sleep(0.1)
