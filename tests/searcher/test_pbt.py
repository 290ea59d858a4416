"""Population-based training (``pbt``): the pure rules, as property tests over simulated
searches, and the explore step's bounds."""

from __future__ import annotations

import json
import math
import random
import uuid
from typing import Any

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from pedl.config import ConfigError, parse_config, sample_hparams
from pedl.searcher import (
    Close,
    CloseTrial,
    Create,
    ExitedReason,
    NewTrial,
    PBTSearch,
    SearcherRunner,
    SearcherState,
    Shutdown,
    TrainTrial,
    TrialCheckpoint,
    ValidateAfter,
    explore_hparams,
    make_search_method,
    operation_from_dict,
    operation_to_dict,
)
from pedl.searcher._pbt_explore import validated_space

SPACE = {
    "lr": {"type": "log", "minval": -4, "maxval": -1},
    "units": {"type": "int", "minval": 4, "maxval": 64},
    "dropout": {"type": "double", "minval": 0.0, "maxval": 0.5},
    "act": {"type": "categorical", "vals": ["relu", "tanh"]},
    "opt": {"momentum": {"type": "double", "minval": 0.5, "maxval": 0.99}},
    "global_batch_size": 32,
}


def _sample(rng: random.Random) -> dict[str, Any]:
    return sample_hparams(SPACE, rng)


def _search(
    population: int, rounds: int, fraction: float, *, resample: float = 0.25, seed: int = 1
) -> PBTSearch:
    space = validated_space(SPACE)
    return PBTSearch(
        sample=_sample,
        explore=lambda parent, rng: explore_hparams(
            space, parent, rng, resample_probability=resample, perturb_factor=0.2
        ),
        population_size=population,
        num_rounds=rounds,
        length_per_round=10,
        truncate_fraction=fraction,
        smaller_is_better=False,
        seed=seed,
    )


def _score(hparams: dict[str, Any]) -> float:
    return -abs(math.log10(hparams["lr"]) + 2.5) + hparams["units"] / 100


def _simulate(
    search: PBTSearch, exits: frozenset[int] = frozenset(), order_seed: int = 0
) -> list[Any]:
    """Run the search to its end: every trial created at once; each ValidateAfter answered
    (in a shuffled order) with a score of its hyperparameters, each Close with the close; a
    trial whose request number is in ``exits`` errors on its first ValidateAfter."""
    state = SearcherState()
    order = random.Random(order_seed)
    pending = list(search.initial_operations(state))
    log: list[Any] = list(pending)
    hparams: dict[uuid.UUID, dict[str, Any]] = {}
    shut = False
    for _ in range(10_000):
        if not pending:
            break
        op = pending.pop(order.randrange(len(pending)))
        match op:
            case Create():
                hparams[op.request_id] = op.hparams
                new = search.on_trial_created(state, op.request_id)
            case ValidateAfter():
                if op.request_id.int in exits:
                    new = search.on_trial_exited_early(
                        state, op.request_id, ExitedReason.ERRORED
                    ) + search.on_trial_closed(state, op.request_id)
                else:
                    metric = _score(hparams[op.request_id]) + op.length / 1000
                    new = search.on_validation_completed(state, op.request_id, metric, op.length)
            case Close():
                new = search.on_trial_closed(state, op.request_id)
            case Shutdown():
                assert not shut, "Shutdown came twice"
                shut = True
                new = []
            case _:
                new = []
        log += new
        pending += new
    assert shut, "the search never shut down"
    return log


@settings(max_examples=40)
@given(
    population=st.integers(1, 8),
    rounds=st.integers(1, 4),
    fraction=st.floats(0, 0.5),
    order_seed=st.integers(0, 1000),
    seed=st.integers(0, 1000),
)
def test_population_size_and_truncation_hold_every_round(
    population: int, rounds: int, fraction: float, order_seed: int, seed: int
) -> None:
    search = _search(population, rounds, fraction, seed=seed)
    log = _simulate(search, order_seed=order_seed)
    truncate = int(fraction * population)
    creates = [op for op in log if isinstance(op, Create)]
    # P trials, then n copies after every round but the last.
    assert len(creates) == population + truncate * (rounds - 1)
    members = search.members
    for r in range(rounds):
        in_round = [m for m in members if m.born <= r and len(m.history) > r - m.born]
        assert len(in_round) == population, f"round {r} had {len(in_round)} members"
    # Each copy's parent was among the best n of the round it was copied after; each closed
    # member among the worst n.
    for child in (m for m in members if m.parent is not None):
        parent = next(m for m in members if m.request_id == child.parent)
        r = child.born - 1
        ranked = sorted(
            (m for m in members if m.born <= r and len(m.history) > r - m.born),
            key=lambda m: (-(m.history[r - m.born] or -math.inf), uuid.UUID(m.request_id).int),
        )
        assert parent in ranked[:truncate]
        assert child.parent_length == (r - parent.born + 1) * 10
        create = next(op for op in creates if str(op.request_id) == child.request_id)
        assert create.checkpoint == TrialCheckpoint(
            uuid.UUID(parent.request_id), child.parent_length
        )
    for m in members:
        assert m.closed
        survived = len(m.history)
        assert m.born + survived <= rounds
        if m.born + survived < rounds:  # truncated: it ranked among the worst n
            assert truncate > 0
    assert search.progress(SearcherState()) == 1.0


@settings(max_examples=25)
@given(
    population=st.integers(2, 6),
    rounds=st.integers(2, 4),
    exits=st.frozensets(st.integers(1, 6), max_size=6),
    order_seed=st.integers(0, 100),
)
def test_exits_keep_their_place_and_the_search_ends(
    population: int, rounds: int, exits: frozenset[int], order_seed: int
) -> None:
    search = _search(population, rounds, 0.5)
    log = _simulate(search, exits=exits, order_seed=order_seed)
    shutdown = [op for op in log if isinstance(op, Shutdown)]
    assert len(shutdown) == 1
    everyone_errored = all(m.exited == "ERRORED" for m in search.members)
    assert shutdown[0].failure == everyone_errored
    for m in search.members:
        assert (
            m.parent is None
            or not next(p for p in search.members if p.request_id == m.parent).exited
        ), "an exited trial was copied"


def test_replaying_the_event_log_restores_population_lineage_and_metrics() -> None:
    config = parse_config(PBT_CONFIG)
    runner = SearcherRunner.replay(config, [])
    pending = list(runner.initial_operations())
    hp: dict[int, dict[str, Any]] = {}
    steps = 0
    while pending and steps < 40:
        op = pending.pop(0)
        steps += 1
        if isinstance(op, NewTrial):
            hp[op.request_id] = op.hparams
            pending += runner.on_trial_created(op.request_id)
        elif isinstance(op, TrainTrial):
            pending += runner.on_validation_completed(
                op.request_id, _score(hp[op.request_id]) + op.length, op.length
            )
        elif isinstance(op, CloseTrial):
            pending += runner.on_trial_closed(op.request_id)
    # Cut mid-search: rebuild from the log alone, as a restarted master does.
    again = SearcherRunner.replay(config, runner.events)
    assert isinstance(runner.method, PBTSearch) and isinstance(again.method, PBTSearch)
    assert again.method.state_dict() == runner.method.state_dict()
    assert again.outstanding_operations == runner.outstanding_operations
    assert json.loads(json.dumps(runner.method.state_dict())) == runner.method.state_dict()


def test_operations_round_trip_a_copy() -> None:
    op = Create(uuid.UUID(int=5), {"a": 1}, TrialCheckpoint(uuid.UUID(int=2), 30))
    assert operation_from_dict(json.loads(json.dumps(operation_to_dict(op)))) == op
    assert op.checkpoint_uuid is None and op.parent == TrialCheckpoint(uuid.UUID(int=2), 30)


@settings(max_examples=200)
@given(seed=st.integers(0, 10**6), resample=st.floats(0, 1), factor=st.floats(0, 1))
def test_explored_values_stay_in_range_and_move_by_the_factor(
    seed: int, resample: float, factor: float
) -> None:
    space = validated_space(SPACE)
    rng = random.Random(seed)
    parent = _sample(rng)
    child = explore_hparams(
        space, parent, rng, resample_probability=resample, perturb_factor=factor
    )
    assert list(child) == list(SPACE)
    assert 1e-4 * (1 - 1e-9) <= child["lr"] <= 1e-1 * (1 + 1e-9)
    assert 4 <= child["units"] <= 64 and isinstance(child["units"], int)
    assert 0.0 <= child["dropout"] <= 0.5
    assert 0.5 <= child["opt"]["momentum"] <= 0.99
    assert child["act"] in ("relu", "tanh")
    assert child["global_batch_size"] == 32
    if resample == 0:
        # Perturbed only: each number moved by x(1 - f) or x(1 + f), clamped; the rest kept.
        assert child["act"] == parent["act"]
        for name, low, high in (("dropout", 0.0, 0.5), ("lr", 1e-4, 1e-1)):
            options = [min(max(parent[name] * m, low), high) for m in (1 - factor, 1 + factor)]
            assert any(math.isclose(child[name], o, rel_tol=1e-12) for o in options)
        down = max(math.floor(parent["units"] * (1 - factor)), 4)
        up = min(math.ceil(parent["units"] * (1 + factor)), 64)
        assert child["units"] in (down, up)


def test_resampling_everything_draws_afresh() -> None:
    space = validated_space(SPACE)
    parent = _sample(random.Random(0))
    children = [
        explore_hparams(space, parent, random.Random(s), resample_probability=1, perturb_factor=0)
        for s in range(30)
    ]
    assert {c["act"] for c in children} == {"relu", "tanh"}
    assert len({c["units"] for c in children}) > 5


PBT_CONFIG = """
name: pbt
entrypoint: model_def:Trial
hyperparameters:
  global_batch_size: 32
  lr: {type: log, minval: -4, maxval: -1}
  units: {type: int, minval: 4, maxval: 64}
searcher:
  name: pbt
  metric: accuracy
  smaller_is_better: false
  population_size: 4
  num_rounds: 3
  length_per_round: {batches: 20}
  replace_function: {truncate_fraction: 0.25}
  explore_function: {resample_probability: 0.2, perturb_factor: 0.2}
"""


def test_the_config_builds_a_pbt_search() -> None:
    config = parse_config(PBT_CONFIG)
    method = make_search_method(config)
    assert isinstance(method, PBTSearch)
    assert method.population_size == 4 and method.truncate_count == 1
    assert config.searcher_max_length == 60 and config.searcher_unit == "batches"


@pytest.mark.parametrize(
    ("change", "path"),
    [
        ("truncate_fraction: 0.25", "truncate_fraction: 0.75"),
        ("resample_probability: 0.2", "resample_probability: 1.5"),
        ("population_size: 4", "population_size: 0"),
        ("length_per_round: {batches: 20}", "length_per_round: {batches: 0}"),
    ],
)
def test_bad_pbt_fields_are_refused_naming_them(change: str, path: str) -> None:
    with pytest.raises(ConfigError) as info:
        parse_config(PBT_CONFIG.replace(change, path))
    field = path.split(":")[0]
    assert any(field in issue.path for issue in info.value.issues), info.value.issues
