"""The driver runs population-based training: a copy starts from its parent's checkpoint at
the copied length (the parent is asked to store it there first), records its lineage, and a
driver rebuilt from the store mid-round goes on to the same search."""

from __future__ import annotations

import random
from dataclasses import dataclass, field, replace
from typing import Any

import pytest

from pedl.config import parse_config
from pedl.engine import Action, CreateTrial, ExperimentDriver
from pedl.vocabulary import ExperimentState, TrialOutcome, TrialState
from tests.engine.test_driver import Shell


def pbt_config(population: int = 4, rounds: int = 3) -> Any:
    return parse_config(
        {
            "name": "pbt-driver",
            "reproducibility": {"experiment_seed": 7},
            "hyperparameters": {
                "global_batch_size": 4,
                "lr": {"type": "log", "minval": -4, "maxval": -1},
                "units": {"type": "int", "minval": 2, "maxval": 64},
            },
            "searcher": {
                "name": "pbt",
                "metric": "accuracy",
                "smaller_is_better": False,
                "population_size": population,
                "num_rounds": rounds,
                "length_per_round": {"batches": 10},
                "replace_function": {"truncate_fraction": 0.5},
                "explore_function": {"resample_probability": 0.2, "perturb_factor": 0.2},
            },
            "checkpoint_storage": {
                "type": "shared_fs",
                "host_path": "/tmp/unused",
                "save_trial_latest": 1,
                "save_trial_best": 0,
                "save_experiment_best": 0,
            },
        }
    )


def accuracy(hparams: dict[str, Any], batches: int) -> float:
    return hparams["units"] / 64 - abs(hparams["lr"] - 0.01) + batches / 1000


@dataclass
class PBTShell(Shell):
    """The in-memory store, keeping each created trial's lineage (as the database does)."""

    creates: dict[int, CreateTrial] = field(default_factory=dict)
    trial_of: dict[int, int] = field(default_factory=dict)
    started_from: dict[int, str | None] = field(default_factory=dict)

    def apply(self, actions: list[Action]) -> None:
        for action in actions:
            if isinstance(action, CreateTrial):
                self.creates[action.request_id] = action
        super().apply(actions)
        for trial_id, record in self.trials.items():
            self.trial_of[record.request_id] = trial_id
            create = self.creates.get(record.request_id)
            if create is not None and record.warm_start != create.warm_start:
                self.trials[trial_id] = replace(record, warm_start=create.warm_start)

    def run_once(self, trial_id: int) -> None:
        """One process of the trial, as the chunk loop runs it: restored from its latest
        checkpoint (or its warm start), it trains to each length asked, validates there
        (no checkpoint), and when told to wait or that it is closed it checkpoints (unless
        the latest one is at that batch) and exits."""
        record = self.trials[trial_id]
        done = record.latest_checkpoint_batches or 0
        self.apply(self.driver.trial_started(trial_id))
        while (answer := self.driver.next_operation(trial_id)).status == "train":
            assert answer.length is not None and answer.length > done
            done = answer.length
            self.validate(trial_id, done, accuracy(record.hparams, done))
        if self.trials[trial_id].latest_checkpoint_batches != done:
            self.checkpoint(trial_id, done)
        self.apply(self.driver.trial_exited(trial_id, TrialOutcome.COMPLETED, None))


def run(shell: PBTShell, rng: random.Random, crash_at: int | None = None) -> PBTShell:
    for step in range(500):
        if shell.experiment.is_terminal:
            return shell
        if step == crash_at:  # the master dies between events; rebuilt from its store
            driver = ExperimentDriver(
                shell.driver.config,
                state=shell.experiment,
                events=shell.events,
                trials=shell.trials.values(),
                checkpoints=shell.checkpoints.values(),
            )
            shell.driver = driver
            shell.apply(driver.start())
        runnable = shell.driver.runnable_trials()
        assert runnable, "nothing to run, yet the experiment has not ended"
        shell.run_once(rng.choice(runnable))
    raise AssertionError("the search did not end")


def start(population: int = 4, rounds: int = 3) -> PBTShell:
    shell = PBTShell(ExperimentDriver(pbt_config(population, rounds)))
    shell.apply(shell.driver.start())
    return shell


def test_each_copy_starts_from_its_parents_checkpoint_at_the_copied_length() -> None:
    shell = run(start(), random.Random(3))
    assert shell.experiment == ExperimentState.COMPLETED
    copies = [c for c in shell.creates.values() if c.parent_trial_id is not None]
    assert len(shell.creates) == 4 + 2 * 2 and len(copies) == 4
    for copy in copies:
        assert copy.parent_trial_id is not None
        parent = shell.trials[copy.parent_trial_id]
        assert copy.warm_start == f"ckpt-{parent.trial_id}-{copy.parent_batches}"
        assert copy.parent_batches is not None and copy.parent_batches % 10 == 0
        flat_parent = {"lr": parent.hparams["lr"], "units": parent.hparams["units"]}
        assert copy.changed_hparams == {
            name: {"from": flat_parent[name], "to": copy.hparams[name]}
            for name in ("lr", "units")
            if flat_parent[name] != copy.hparams[name]
        }
    assert all(r.state == TrialState.COMPLETED for r in shell.trials.values())


def test_a_running_parent_is_asked_to_stop_and_checkpoint_at_the_copied_length() -> None:
    shell = start(population=2, rounds=2)
    first, second = sorted(shell.trials)
    shell.run_once(first)  # validates at 10, told to wait: checkpoints at 10 and exits
    shell.apply(shell.driver.trial_started(second))
    answer = shell.driver.next_operation(second)
    assert answer.length == 10
    shell.validate(second, 10, 1e9)  # the round ends: `second` is the best, to be copied
    assert shell.driver.next_operation(second).status == "wait"
    assert not [c for c in shell.creates.values() if c.parent_trial_id]
    shell.checkpoint(second, 10)  # it stops there, storing the checkpoint
    (copy,) = [c for c in shell.creates.values() if c.parent_trial_id]
    assert (copy.parent_trial_id, copy.warm_start) == (second, f"ckpt-{second}-10")
    assert shell.driver.next_operation(second) == shell.driver.next_operation(second)
    assert shell.driver.next_operation(second).length == 20  # then it trains on


@pytest.mark.parametrize(("order", "crash_at"), [(1, 3), (2, 9), (3, 16)])
def test_a_master_rebuilt_mid_round_runs_the_same_search(order: int, crash_at: int) -> None:
    """The same trials (hyperparameters, lineage, warm starts) and searcher log, with or
    without a crash."""
    plain = run(start(), random.Random(order))
    crashed = run(start(), random.Random(order), crash_at=crash_at)

    def summary(shell: PBTShell) -> list[tuple[Any, ...]]:
        return [
            (
                c.request_id,
                c.hparams,
                c.warm_start,
                c.parent_trial_id,
                c.parent_batches,
                c.changed_hparams,
            )
            for c in sorted(shell.creates.values(), key=lambda c: c.request_id)
        ]

    assert summary(crashed) == summary(plain)
    assert crashed.events == plain.events
    assert crashed.experiment == plain.experiment == ExperimentState.COMPLETED
