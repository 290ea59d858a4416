"""Warm workers through the real master over HTTP: a trial in a reused process trains bit for bit
as in a fresh one, finds no state of the trial before it, and a trial that raised or was
SIGKILLed leaves no process behind for the next.

The same grid search runs on two masters side by side: one reusing workers (the default) on
one slot, so that the trials run in order, one after another; one starting a fresh process per
trial (``PEDL_WORKER_REUSE=0``). Each trial of
``reuse_model`` records its pid and what it found of the state ``mutate`` changes.
"""

from __future__ import annotations

import json
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import numpy as np
import pytest

from .e2e import TERMINAL, MasterProcess, create_experiment, logs, trials, wait_for

pytestmark = pytest.mark.slow

MODEL_DIR = Path(__file__).parent / "reuse_model"
MODES = ["mutate", "after_mutate", "raise", "after_raise", "sigkill", "after_sigkill"]
CONFIG = """
name: worker-reuse
hyperparameters:
  global_batch_size: 16
  mode: {{type: categorical, vals: {modes}}}
searcher:
  name: grid
  metric: val_loss
  max_length: {{batches: 4}}
scheduling_unit: 2
max_restarts: 0
reproducibility: {{experiment_seed: 11}}
environment:
  environment_variables: ["PEDL_TEST_RECORDS={records}"]
"""
NOTHING_LEAKED = {"global": None, "submodule": [], "variable": None, "path": False}


def weights(master: MasterProcess, trial: dict[str, Any]) -> dict[str, np.ndarray]:
    """Every variable of the trial's latest checkpoint (model and optimizer), by path."""
    uuid = trial["latest_checkpoint_uuid"]
    assert uuid, trial
    state = master.home / "pedl" / "checkpoints" / uuid / "state"
    blob = (state / "variables.bin").read_bytes()
    return {
        entry["path"]: np.frombuffer(
            blob,
            dtype=np.dtype(entry["dtype"]),
            count=int(np.prod(entry["shape"])),
            offset=entry["offset"],
        ).reshape(entry["shape"])
        for entry in json.loads((state / "variables.json").read_text())
    }


class Run:
    """The grid search on one master: its trials by mode and their records, in start order."""

    def __init__(self, master: MasterProcess, experiment_id: int, records: Path) -> None:
        self.master = master
        self.trials = {t["hparams"]["mode"]: t for t in trials(master.http, experiment_id)}
        found = [json.loads(p.read_text()) for p in records.glob("*.json")]
        self.records = sorted(found, key=lambda r: r["started"])

    def pid(self, mode: str) -> int:
        return next(r["pid"] for r in self.records if r["mode"] == mode)


@pytest.fixture(scope="module")
def runs(tmp_path_factory: pytest.TempPathFactory) -> Iterator[dict[str, Run]]:
    masters = {
        "reused": MasterProcess(
            tmp_path_factory.mktemp("reused"), cpu_slots=1, env={"PEDL_WORKER_REUSE": "1"}
        ),
        # two slots: its trials need no order, only their seeds (from the grid's order)
        "fresh": MasterProcess(
            tmp_path_factory.mktemp("fresh"), cpu_slots=2, env={"PEDL_WORKER_REUSE": "0"}
        ),
    }
    try:
        ids = {}
        for name, master in masters.items():
            master.start()
            records = master.home / "records"
            records.mkdir()
            config = CONFIG.format(modes=json.dumps(MODES), records=records)
            ids[name] = create_experiment(master.http, config, MODEL_DIR)
        out = {}
        for name, master in masters.items():
            wait_for(master.http, ids[name], TERMINAL, timeout=300, master=master)
            out[name] = Run(master, ids[name], master.home / "records")
        yield out
    finally:
        for master in masters.values():
            master.stop()


def test_trials_ran_in_order_and_ended_as_asked(runs: dict[str, Run]) -> None:
    assert [r["mode"] for r in runs["reused"].records] == MODES
    for run in runs.values():
        assert sorted(r["mode"] for r in run.records) == sorted(MODES)
        states = {mode: trial["state"] for mode, trial in run.trials.items()}
        failed = {"raise", "sigkill"}
        assert states == {m: "ERROR" if m in failed else "COMPLETED" for m in MODES}, states


def test_a_worker_is_reused_only_after_a_normal_end(runs: dict[str, Run]) -> None:
    reused = runs["reused"]
    assert reused.pid("after_mutate") == reused.pid("mutate")
    assert reused.pid("raise") == reused.pid("after_mutate")
    assert reused.pid("after_raise") != reused.pid("raise")  # it raised: a new process
    assert reused.pid("sigkill") == reused.pid("after_raise")
    assert reused.pid("after_sigkill") != reused.pid("sigkill")  # it was killed: a new one
    assert "the trial runs in the warm worker process" in logs(
        reused.master.http, reused.trials["after_mutate"]["id"]
    )
    fresh = runs["fresh"]
    assert len({fresh.pid(mode) for mode in MODES}) == len(MODES)


def test_a_reused_worker_trains_bit_for_bit_as_a_fresh_process(runs: dict[str, Run]) -> None:
    reused, fresh = runs["reused"], runs["fresh"]
    for mode in ("mutate", "after_mutate", "after_raise", "after_sigkill"):
        ours = weights(reused.master, reused.trials[mode])
        theirs = weights(fresh.master, fresh.trials[mode])
        assert list(ours) == list(theirs), mode
        for path, array in ours.items():
            assert np.array_equal(array, theirs[path]), (mode, path)


def test_no_trial_finds_the_state_of_the_trial_before_it(runs: dict[str, Run]) -> None:
    for run in runs.values():
        assert [r["found"] for r in run.records] == [NOTHING_LEAKED] * len(MODES)


def test_each_trial_s_output_reaches_its_own_log_only(runs: dict[str, Run]) -> None:
    run = runs["reused"]
    ids = [run.trials[mode]["id"] for mode in MODES]
    for trial_id in ids:
        text = logs(run.master.http, trial_id)
        assert f"output of trial {trial_id}\n" in text + "\n"
        assert f"errors of trial {trial_id}\n" in text + "\n"
        for other in ids:
            if other != trial_id:
                assert f"of trial {other}\n" not in text + "\n", (trial_id, text)
