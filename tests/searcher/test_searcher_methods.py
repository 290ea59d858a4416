"""single, grid and random searchers driven through simulated experiments."""

from __future__ import annotations

import json
import random
import uuid
from typing import Any

import pytest
from searcher_sim import simulate

from pedl.config import ExperimentConfig, grid_hparams, sample_hparams
from pedl.searcher import (
    MAX_INVALID_REPLACEMENTS,
    CloseTrial,
    ExitedReason,
    GridSearch,
    JSONStateSearchMethod,
    NewTrial,
    RandomSearch,
    SearcherError,
    SearcherRunner,
    SearcherState,
    Shutdown,
    SingleSearch,
    TrainTrial,
    make_search_method,
    trial_seed_for,
)


def sample(rng: random.Random) -> dict[str, Any]:
    return {"lr": rng.uniform(0.001, 0.1), "layers": rng.choice([1, 2, 3]), "const": "x"}


SPACE = {
    "lr": {"type": "double", "minval": 0.001, "maxval": 0.1, "count": 3},
    "layers": {"type": "categorical", "vals": [1, 2]},
    "units": {"type": "int", "minval": 4, "maxval": 64, "count": 2},
    "optimizer": "adam",
}


def config(searcher: dict[str, Any], seed: int = 7) -> Any:
    return ExperimentConfig.model_validate(
        {
            "searcher": {"metric": "loss", "max_length": {"batches": 100}, **searcher},
            "hyperparameters": SPACE,
            "reproducibility": {"experiment_seed": seed},
        }
    )


def test_single_operations_in_order() -> None:
    method = SingleSearch(sample=sample, max_length=50, seed=3)
    searcher = SearcherRunner(method, seed=5)
    expected_hparams = sample(random.Random(3))
    ops = searcher.initial_operations()
    assert ops == [NewTrial(1, expected_hparams, trial_seed_for(5, 1)), TrainTrial(1, 50)]
    assert searcher.progress() == 0.0
    assert searcher.on_trial_created(1) == []
    assert searcher.on_validation_completed(1, 0.5, 50) == [CloseTrial(1)]
    assert searcher.progress() == 1.0
    assert searcher.on_trial_closed(1) == [Shutdown(failure=False)]
    with pytest.raises(SearcherError, match="already called"):
        method.initial_operations(SearcherState())


def test_single_from_config_trains_to_max_length() -> None:
    transcript = simulate(make_search_method(config({"name": "single"})))
    (create,) = transcript.creates
    assert create.hparams["optimizer"] == "adam"
    assert create.hparams["layers"] in (1, 2)
    assert [op for op in transcript.all_ops if isinstance(op, TrainTrial)] == [TrainTrial(1, 100)]
    assert transcript.all_ops[-1] == Shutdown()


@pytest.mark.parametrize(("limit", "expected_max_open"), [(0, 12), (1, 1), (3, 3), (50, 12)])
def test_grid_visits_every_point_once_within_concurrency(
    limit: int, expected_max_open: int
) -> None:
    cfg = config({"name": "grid", "max_concurrent_trials": limit})
    points = grid_hparams(cfg.hyperparameters)
    assert len(points) == 12
    initial = SearcherRunner(make_search_method(cfg)).initial_operations()
    assert sum(isinstance(op, NewTrial) for op in initial) == expected_max_open
    transcript = simulate(make_search_method(cfg), order_seed=1)
    assert [c.hparams for c in transcript.creates] == points
    assert [c.request_id for c in transcript.creates] == list(range(1, 13))
    assert transcript.max_open <= expected_max_open
    assert simulate(make_search_method(cfg)).max_open == expected_max_open  # FIFO order
    lengths = {op.length for op in transcript.all_ops if isinstance(op, TrainTrial)}
    assert lengths == {100}
    closes = [op.request_id for op in transcript.all_ops if isinstance(op, CloseTrial)]
    assert sorted(closes) == list(range(1, 13))
    assert transcript.all_ops[-1] == Shutdown()
    assert sum(isinstance(op, Shutdown) for op in transcript.all_ops) == 1


def test_trial_seeds_come_from_experiment_seed() -> None:
    def run(seed: int) -> Any:
        return simulate(SearcherRunner(make_search_method(config({"name": "grid"})), seed=seed))

    a, b, c = run(1), run(1), run(2)
    assert [x.trial_seed for x in a.creates] == [x.trial_seed for x in b.creates]
    assert [x.trial_seed for x in a.creates] != [x.trial_seed for x in c.creates]
    assert len({x.trial_seed for x in a.creates}) == len(a.creates)
    assert [x.hparams for x in a.creates] == [x.hparams for x in c.creates]


def test_random_draws_from_seeded_rng_in_creation_order() -> None:
    cfg = config({"name": "random", "max_trials": 5, "max_concurrent_trials": 2})
    transcript = simulate(make_search_method(cfg), order_seed=4)
    rng = random.Random(7)
    expected = [sample_hparams(cfg.hyperparameters, rng) for _ in range(5)]
    assert [c.hparams for c in transcript.creates] == expected
    assert transcript.max_open == 2
    assert transcript.all_ops[-1] == Shutdown()


@pytest.mark.parametrize("order_seed", [None, 0, 1, 2])
def test_random_is_deterministic_for_a_seed(order_seed: int | None) -> None:
    def run(seed: int) -> Any:
        searcher = RandomSearch(
            sample=sample, max_trials=6, max_length=10, max_concurrent_trials=2, seed=seed
        )
        return simulate(searcher, order_seed=order_seed)

    first, second, other = run(11), run(11), run(12)
    assert first.events == second.events and first.ops == second.ops
    assert [c.hparams for c in first.creates] != [c.hparams for c in other.creates]


def test_concurrency_limit_creates_next_on_close() -> None:
    searcher = SearcherRunner(
        RandomSearch(sample=sample, max_trials=3, max_length=10, max_concurrent_trials=1, seed=0)
    )
    ops = searcher.initial_operations()
    assert [type(op) for op in ops] == [NewTrial, TrainTrial]
    assert searcher.on_trial_created(1) == []
    assert searcher.on_validation_completed(1, 1.0, 10) == [CloseTrial(1)]
    follow = searcher.on_trial_closed(1)
    assert [type(op) for op in follow] == [NewTrial, TrainTrial]
    assert follow[0].request_id == 2  # type: ignore[union-attr]


def test_early_exit_is_not_retried_and_frees_a_slot() -> None:
    searcher = RandomSearch(
        sample=sample, max_trials=4, max_length=10, max_concurrent_trials=2, seed=0
    )
    transcript = simulate(searcher, exits={2: ExitedReason.INVALID_HP, 3: ExitedReason.ERRORED})
    # The invalid draw (2) is replaced by a new sample (5); the errored trial (3) is not.
    assert [c.request_id for c in transcript.creates] == [1, 2, 3, 4, 5]
    assert transcript.max_open == 2
    assert not any(
        isinstance(op, CloseTrial) and op.request_id in (2, 3) for op in transcript.all_ops
    )
    assert transcript.all_ops[-1] == Shutdown(failure=False)


def test_grid_marks_an_invalid_point_and_completes() -> None:
    searcher = GridSearch(points=[{"a": 1}, {"a": 2}, {"a": 3}], max_length=5, seed=0)
    transcript = simulate(searcher, exits={2: ExitedReason.INVALID_HP})
    assert [c.hparams for c in transcript.creates] == [{"a": 1}, {"a": 2}, {"a": 3}]
    assert transcript.all_ops[-1] == Shutdown(failure=False)


def test_random_search_gives_up_replacing_after_the_cap() -> None:
    searcher = RandomSearch(sample=sample, max_trials=2, max_length=5, seed=0)
    exits = {i: ExitedReason.INVALID_HP for i in range(1, MAX_INVALID_REPLACEMENTS + 10)}
    transcript = simulate(searcher, exits=exits)
    assert len(transcript.creates) == MAX_INVALID_REPLACEMENTS + 2
    assert isinstance(transcript.all_ops[-1], Shutdown)


def test_shutdown_is_a_failure_when_every_trial_errored() -> None:
    searcher = GridSearch(points=[{"a": 1}, {"a": 2}], max_length=5, seed=0)
    transcript = simulate(searcher, exits={1: ExitedReason.ERRORED, 2: ExitedReason.ERRORED})
    assert transcript.all_ops[-1] == Shutdown(failure=True)
    mixed = GridSearch(points=[{"a": 1}, {"a": 2}], max_length=5, seed=0)
    transcript = simulate(mixed, exits={1: ExitedReason.ERRORED, 2: ExitedReason.USER_CANCELED})
    assert transcript.all_ops[-1] == Shutdown(failure=False)


def test_exit_then_close_releases_the_slot_once() -> None:
    searcher = SearcherRunner(
        RandomSearch(sample=sample, max_trials=3, max_length=10, max_concurrent_trials=1, seed=0)
    )
    searcher.initial_operations()
    searcher.on_trial_created(1)
    created = searcher.on_trial_exited_early(1, ExitedReason.ERRORED)
    assert [type(op) for op in created] == [NewTrial, TrainTrial]
    assert searcher.on_trial_closed(1) == []  # no second replacement


def test_progress_counts_finished_trials() -> None:
    searcher = GridSearch(
        points=[{"a": i} for i in range(4)], max_length=10, max_concurrent_trials=1, seed=0
    )
    transcript = simulate(searcher)
    assert transcript.progress[0] == 0.0
    assert transcript.progress == sorted(transcript.progress)  # never goes back
    assert transcript.progress[-1] == 1.0
    # One trial at a time: once the first is trained to max_length, one of four is done.
    first_validated = next(
        i for i, e in enumerate(transcript.events) if e[0] == "validated" and e[1] == 1
    )
    assert transcript.progress[first_validated - 1] == 0.0
    assert transcript.progress[first_validated] == pytest.approx(0.25)
    assert transcript.progress[transcript.events.index(("closed", 2))] == pytest.approx(0.5)


def test_partial_validation_does_not_close() -> None:
    searcher = SearcherRunner(SingleSearch(sample=sample, max_length=100, seed=0))
    searcher.initial_operations()
    searcher.on_trial_created(1)
    assert searcher.on_validation_completed(1, 0.3, 40) == []
    assert searcher.progress() == pytest.approx(0.4)
    assert searcher.on_validation_completed(1, 0.2, 100) == [CloseTrial(1)]


def test_empty_search_shuts_down_at_once() -> None:
    state = SearcherState()
    assert GridSearch(points=[], max_length=5, seed=0).initial_operations(state) == [Shutdown()]
    random_search = RandomSearch(sample=sample, max_trials=0, max_length=5, seed=0)
    assert random_search.initial_operations(state) == [Shutdown()]
    assert random_search.progress(state) == 1.0


def test_unknown_request_id_and_bad_settings_refused() -> None:
    searcher = SingleSearch(sample=sample, max_length=5, seed=0)
    searcher.initial_operations(SearcherState())
    with pytest.raises(SearcherError, match="Unknown trial request id"):
        searcher.on_trial_created(SearcherState(), uuid.UUID(int=9))
    with pytest.raises(SearcherError, match="max_length=0"):
        SingleSearch(sample=sample, max_length=0, seed=0)


def test_a_custom_searcher_is_not_built_by_the_factory() -> None:
    cfg = config({"name": "custom"})
    with pytest.raises(SearcherError, match="RemoteSearchMethod"):
        make_search_method(cfg)


@pytest.mark.parametrize(
    "searcher",
    [
        {"name": "single"},
        {"name": "grid", "max_concurrent_trials": 2},
        {"name": "random", "max_trials": 4, "max_concurrent_trials": 3},
    ],
)
def test_state_dict_is_json(searcher: dict[str, Any]) -> None:
    method = make_search_method(config(searcher))
    assert isinstance(method, JSONStateSearchMethod)
    simulate(method, exits={2: ExitedReason.ERRORED}, order_seed=3)
    state = method.state_dict()
    assert json.loads(json.dumps(state)) == state
    other = make_search_method(config(searcher))
    assert isinstance(other, JSONStateSearchMethod)
    other.load_state_dict(json.loads(json.dumps(state)))
    assert other.state_dict() == state
    assert other.progress(SearcherState()) == method.progress(SearcherState()) == 1.0


def test_state_of_another_searcher_refused() -> None:
    state = GridSearch(points=[{}], max_length=5, seed=0).state_dict()
    with pytest.raises(SearcherError, match="cannot be loaded"):
        RandomSearch(sample=sample, max_trials=1, max_length=5, seed=0).load_state_dict(state)
