"""Multi-objective search through the driver: ``searcher.metrics`` with two objectives for
random, grid, adaptive_asha, tpe and nsga2; the searcher hears each validation's objective
vector (recorded in its event log), ASHA promotes by Pareto rank, and a driver rebuilt from
its store mid-search goes on to the same search."""

from __future__ import annotations

import random
import uuid
from dataclasses import replace
from typing import Any

import pytest

from pedl.config import ConfigError, parse_config
from pedl.engine import ExperimentDriver
from pedl.searcher import (
    AdaptiveASHASearch,
    Close,
    Create,
    JSONStateSearchMethod,
    SearcherRunner,
    SearcherState,
    ValidateAfter,
    make_search_method,
    pareto_order,
)
from pedl.vocabulary import ExperimentState, TrialOutcome
from tests.engine.test_driver import Shell

OBJECTIVES = [
    {"name": "accuracy", "smaller_is_better": False},
    {"name": "params", "smaller_is_better": True},
]

SEARCHERS: dict[str, dict[str, Any]] = {
    "random": {"name": "random", "max_trials": 6, "max_length": {"batches": 8}},
    "grid": {"name": "grid", "max_length": {"batches": 8}, "max_concurrent_trials": 2},
    "adaptive_asha": {
        "name": "adaptive_asha",
        "max_trials": 9,
        "max_length": {"batches": 16},
        "divisor": 2,
        "max_concurrent_trials": 3,
    },
    "tpe": {
        "name": "tpe",
        "max_trials": 6,
        "max_length": {"batches": 8},
        "n_startup_trials": 2,
        "max_concurrent_trials": 2,
    },
    "nsga2": {
        "name": "nsga2",
        "max_trials": 6,
        "max_length": {"batches": 8},
        "population_size": 2,
        "max_concurrent_trials": 2,
    },
}


def mo_config(name: str) -> Any:
    units: dict[str, Any] = {"type": "int", "minval": 2, "maxval": 64}
    if name == "grid":
        units["count"] = 3
    return parse_config(
        {
            "name": f"mo-{name}",
            "reproducibility": {"experiment_seed": 11},
            "hyperparameters": {
                "global_batch_size": 4,
                "units": units,
                "lr": {"type": "categorical", "vals": [0.01, 0.1]},
            },
            "searcher": {**SEARCHERS[name], "metrics": OBJECTIVES},
            "checkpoint_storage": {
                "type": "shared_fs",
                "host_path": "/tmp/unused",
                "save_trial_latest": 1,
                "save_trial_best": 0,
                "save_experiment_best": 0,
            },
        }
    )


def objectives(hparams: dict[str, Any], batches: int) -> dict[str, float]:
    """More units: more accurate and more parameters (a real trade-off)."""
    units = hparams["units"]
    accuracy = 1 - 1 / (units * hparams["lr"] * 10 + batches)
    return {"accuracy": accuracy, "params": float(units * 100 + 10)}


class MOShell(Shell):
    def run_once(self, trial_id: int) -> None:
        """One process of the trial: trains to each length asked, validates there (the
        store records the metrics, the driver hears the searcher metric and the metrics),
        then checkpoints and exits."""
        record = self.trials[trial_id]
        done = record.latest_checkpoint_batches or 0
        self.apply(self.driver.trial_started(trial_id))
        while (answer := self.driver.next_operation(trial_id)).status == "train":
            assert answer.length is not None
            done = answer.length
            metrics = objectives(record.hparams, done)
            self.trials[trial_id] = replace(
                self.trials[trial_id], validation_metric=metrics["accuracy"]
            )
            self.apply(
                self.driver.validation_reported(trial_id, done, metrics["accuracy"], metrics)
            )
        if self.trials[trial_id].latest_checkpoint_batches != done:
            self.checkpoint(trial_id, done)
        self.apply(self.driver.trial_exited(trial_id, TrialOutcome.COMPLETED, None))


def run(shell: MOShell, rng: random.Random, crash_at: int | None = None) -> MOShell:
    for step in range(1000):
        if shell.experiment.is_terminal:
            return shell
        if step == crash_at:  # the master dies between events; rebuilt from its store
            shell.driver = shell.rebuilt()
            shell.apply(shell.driver.start())
        runnable = shell.driver.runnable_trials()
        assert runnable, "nothing to run, yet the experiment has not ended"
        shell.run_once(rng.choice(runnable))
    raise AssertionError("the search did not end")


def start(name: str) -> MOShell:
    shell = MOShell(ExperimentDriver(mo_config(name)))
    shell.apply(shell.driver.start())
    return shell


@pytest.mark.parametrize("name", list(SEARCHERS))
def test_the_searcher_hears_every_objective_and_the_search_completes(name: str) -> None:
    shell = run(start(name), random.Random(1))
    assert shell.experiment == ExperimentState.COMPLETED, shell.error
    validations = [e for e in shell.events if e["kind"] == "validation_completed"]
    assert validations
    by_request = {r.request_id: r for r in shell.trials.values()}
    for event in validations:
        expected = objectives(by_request[event["request_id"]].hparams, event["length"])
        assert event["objectives"] == [expected["accuracy"], expected["params"]]
        assert event["metric"] == expected["accuracy"]


@pytest.mark.parametrize("name", list(SEARCHERS))
@pytest.mark.parametrize("crash_at", [3, 7])
def test_a_rebuilt_driver_runs_the_same_search(name: str, crash_at: int) -> None:
    plain = run(start(name), random.Random(2))
    crashed = run(start(name), random.Random(2), crash_at=crash_at)
    assert crashed.events == plain.events
    assert {r.request_id: r.hparams for r in crashed.trials.values()} == {
        r.request_id: r.hparams for r in plain.trials.values()
    }


def test_a_missing_objective_is_recorded_as_null() -> None:
    shell = start("random")
    trial_id = shell.driver.runnable_trials()[0]
    shell.apply(shell.driver.trial_started(trial_id))
    length = shell.driver.next_operation(trial_id).length
    assert length is not None
    shell.apply(shell.driver.validation_reported(trial_id, length, 0.5, {"accuracy": 0.5}))
    (event,) = [e for e in shell.events if e["kind"] == "validation_completed"]
    assert event["objectives"] == [0.5, None]


def asha(**settings: Any) -> AdaptiveASHASearch:
    return AdaptiveASHASearch(
        sample=lambda rng: {"x": rng.random()},
        max_length=4,
        max_trials=6,
        divisor=2,
        bracket_rungs=[2],
        max_concurrent_trials=6,
        seed=0,
        directions=[False, True],
        **settings,
    )


def test_asha_promotes_by_pareto_rank_and_never_a_dominated_result() -> None:
    """Six trials report at rung 0, one at a time; after each, the promoted ones are the best
    floor(n / 2) in Pareto order (front, then hypervolume contribution): a trial that three
    others dominate is closed, never promoted."""
    search = asha()
    state = SearcherState()
    ops = search.initial_operations(state)
    ids = [op.request_id for op in ops if isinstance(op, Create)]
    assert len(ids) == 6
    # (accuracy, params): larger accuracy, fewer params are better
    results = [(0.9, 100.0), (0.5, 10.0), (0.4, 200.0), (0.95, 1000.0), (0.3, 300.0), (0.8, 50.0)]
    promoted: list[uuid.UUID] = []
    closed: list[uuid.UUID] = []
    for n, (request_id, vector) in enumerate(zip(ids, results, strict=True), start=1):
        ops = search.on_validation_objectives(state, request_id, vector, 2)
        promoted += [op.request_id for op in ops if isinstance(op, ValidateAfter)]
        closed += [op.request_id for op in ops if isinstance(op, Close)]
        points = [(-a, p) for a, p in results[:n]]
        best = {ids[i] for i in pareto_order(points)[: n // 2]}
        assert set(promoted) >= best
    assert len(promoted) == 3
    assert ids[2] not in promoted and ids[4] not in promoted  # dominated by (0.9, 100)
    assert set(closed) == set(ids) - set(promoted)


def test_asha_state_round_trips_with_objectives() -> None:
    search = asha()
    state = SearcherState()
    ids = [op.request_id for op in search.initial_operations(state) if isinstance(op, Create)]
    for request_id, vector in zip(ids[:3], [(0.9, 1.0), (0.5, 0.5), (0.1, 2.0)], strict=True):
        search.on_validation_objectives(state, request_id, vector, 2)
    saved = search.state_dict()
    restored = asha()
    restored.load_state_dict(saved)
    assert restored.state_dict() == saved
    ops = search.on_validation_objectives(state, ids[3], (0.7, 0.1), 2)
    assert restored.on_validation_objectives(state, ids[3], (0.7, 0.1), 2) == ops
    single = AdaptiveASHASearch(
        sample=lambda rng: {"x": rng.random()},
        max_length=4,
        max_trials=6,
        divisor=2,
        bracket_rungs=[2],
        max_concurrent_trials=6,
        seed=0,
    )
    with pytest.raises(Exception, match="directions"):
        single.load_state_dict(saved)


@pytest.mark.parametrize("name", ["tpe", "nsga2"])
def test_optuna_state_round_trips_with_objectives(name: str) -> None:
    shell = run(start(name), random.Random(4))
    method = SearcherRunner.replay(shell.driver.config, shell.events).method
    assert isinstance(method, JSONStateSearchMethod)
    saved = method.state_dict()
    assert saved["settings"]["directions"] == [False, True]
    fresh = make_search_method(shell.driver.config)
    assert isinstance(fresh, JSONStateSearchMethod)
    fresh.load_state_dict(saved)  # the study is rebuilt by telling it the vectors again
    assert fresh.state_dict() == saved


def test_several_objectives_only_for_the_searchers_that_take_them() -> None:
    with pytest.raises(ConfigError, match="several objectives are searched by"):
        parse_config(
            {
                "hyperparameters": {"global_batch_size": 4},
                "searcher": {
                    "name": "async_halving",
                    "num_rungs": 2,
                    "max_trials": 4,
                    "max_length": {"batches": 8},
                    "metrics": OBJECTIVES,
                },
            }
        )
    one = parse_config(
        {
            "hyperparameters": {"global_batch_size": 4},
            "searcher": {
                "name": "single",
                "max_length": {"batches": 8},
                "metrics": [{"name": "loss"}],
            },
        }
    )
    assert (one.searcher.metric, one.searcher.multi_objective) == ("loss", False)
