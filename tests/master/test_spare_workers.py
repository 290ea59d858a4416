"""A spare warm worker through the real master: started with the master, before any trial
needs it (forked by the worker template, see ``test_worker_template``), it runs the first
trial of an experiment without environment variables, bit for bit as a fresh process does (the
fake-worker tests in ``test_local_rm`` check the rules)."""

from __future__ import annotations

from pathlib import Path

import pytest

from .e2e import MasterProcess, create_experiment, final_weights, logs, trials, wait_for

pytestmark = pytest.mark.slow

CONFIG = """
name: spare
hyperparameters: {global_batch_size: 16, lr: 0.01}
searcher: {name: single, metric: val_accuracy, smaller_is_better: false, max_length: {batches: 20}}
scheduling_unit: 10
min_validation_period: {batches: 10}
min_checkpoint_period: {batches: 10}
reproducibility: {experiment_seed: 3}
"""


def test_the_first_trial_runs_in_a_spare_worker_bit_for_bit_as_in_a_fresh_process(
    tmp_path: Path,
) -> None:
    masters = {
        "spare": MasterProcess(tmp_path / "spare", cpu_slots=1, env={"PEDL_SPARE_WORKERS": "1"}),
        "fresh": MasterProcess(tmp_path / "fresh", cpu_slots=1, env={"PEDL_WORKER_REUSE": "0"}),
    }
    try:
        for master in masters.values():
            master.start()
        ids = {name: create_experiment(m.http, CONFIG) for name, m in masters.items()}
        found = {}
        for name, master in masters.items():
            wait_for(master.http, ids[name], {"COMPLETED"}, timeout=240, master=master)
            (trial,) = trials(master.http, ids[name])
            found[name] = (trial, logs(master.http, trial["id"]))
        # The trial came before the spare: the worker template, still importing TensorFlow
        # when the experiment was created, forked its worker (or the spare, had it been ready).
        assert (
            "the trial runs in the spare warm worker process" in found["spare"][1]
            or "forked from the warm worker template (no framework import)" in found["spare"][1]
        )
        assert "warm worker" not in found["fresh"][1]
        weights = {
            name: final_weights(masters[name].home / "pedl" / "checkpoints", trial)
            for name, (trial, _) in found.items()
        }
        assert weights["spare"] == weights["fresh"]
    finally:
        for master in masters.values():
            master.stop()
