"""The Bayesian searchers (tpe, gp over Optuna) as pure logic: simulated event streams in,
operations out; the space mapping; replay and state round trips; what needs what installed."""

from __future__ import annotations

import copy
import importlib.util
import json
import math
import random
import subprocess
import sys
import uuid
from typing import Any

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from searcher_sim import Event, Transcript, send, send_to_method, simulate

from pedl.config import ExperimentConfig, sample_hparams
from pedl.searcher import (
    MAX_INVALID_REPLACEMENTS,
    Close,
    CloseTrial,
    ExitedReason,
    JSONStateSearchMethod,
    NewTrial,
    SearcherError,
    SearcherRunner,
    SearcherState,
    Shutdown,
    TrainTrial,
    gp_from_config,
    missing_optuna_requirements,
    tpe_from_config,
)
from tests.waits import scaled

SPACE: dict[str, Any] = {
    "lr": {"type": "log", "base": 10, "minval": -4, "maxval": -1},
    "dropout": {"type": "double", "minval": 0.0, "maxval": 0.5},
    "optimizer": {
        "units": {"type": "int", "minval": 4, "maxval": 64},
        "kind": {"type": "categorical", "vals": ["adam", [1, 2], {"m": 0.9}, True, 1, 1.0]},
        "frozen": {"type": "const", "val": [3, 4]},
        "empty": {},
    },
    "width": 32,
}


def config(
    searcher: dict[str, Any] | None = None,
    *,
    seed: int = 7,
    space: dict[str, Any] | None = None,
    name: str = "tpe",
) -> ExperimentConfig:
    return ExperimentConfig.model_validate(
        {
            "searcher": {
                "name": name,
                "metric": "loss",
                "max_length": {"batches": 100},
                "max_trials": 6,
                "max_concurrent_trials": 2,
                "n_startup_trials": 2,
                **(searcher or {}),
            },
            "hyperparameters": SPACE if space is None else space,
            "reproducibility": {"experiment_seed": seed},
        }
    )


def tpe(cfg: ExperimentConfig) -> JSONStateSearchMethod:
    method = tpe_from_config(cfg)
    assert isinstance(method, JSONStateSearchMethod)
    return method


def metric(hparams: dict[str, Any]) -> float:
    """Smallest at lr = 1e-2 and no dropout."""
    return (math.log10(hparams["lr"]) + 2) ** 2 + hparams["dropout"]


def valid_creates(transcript: Transcript, exits: dict[int, ExitedReason]) -> int:
    return sum(1 for c in transcript.creates if exits.get(c.request_id) != ExitedReason.INVALID_HP)


def closed_ids(transcript: Transcript) -> list[int]:
    return [e[1] for e in transcript.events if e[0] == "closed"]


# The mapping -------------------------------------------------------------------------------


def test_distributions_follow_the_canonical_order() -> None:
    """Sorted names at every level (Optuna draws in this order), not the space's key order."""
    settings_ = tpe(config()).state_dict()["settings"]
    distributions = {k: json.loads(v) for k, v in settings_["distributions"].items()}
    assert list(distributions) == ["dropout", "lr", "optimizer.kind", "optimizer.units"]
    assert distributions["lr"] == {
        "name": "FloatDistribution",
        "attributes": {"low": -4.0, "high": -1.0, "log": False, "step": None},
    }
    assert distributions["dropout"]["attributes"] == {
        "low": 0.0,
        "high": 0.5,
        "log": False,
        "step": None,
    }
    assert distributions["optimizer.units"] == {
        "name": "IntDistribution",
        "attributes": {"low": 4, "high": 64, "log": False, "step": 1},
    }
    assert distributions["optimizer.kind"] == {
        "name": "CategoricalDistribution",
        "attributes": {"choices": [0, 1, 2, 3, 4, 5]},
    }
    assert settings_["sampler"] == "tpe" and settings_["seed"] == 7


def same_shape(value: Any, spec: Any) -> None:
    """``value`` is what ``sample_hparams`` could draw from the typed ``spec``."""
    if isinstance(spec, dict):
        assert isinstance(value, dict) and list(value) == list(spec)
        for key, sub in spec.items():
            same_shape(value[key], sub)
        return
    kind = spec.type
    if kind == "const":
        assert value == spec.val and type(value) is type(spec.val)
    elif kind == "int":
        assert type(value) is int and spec.minval <= value <= spec.maxval
    elif kind == "double":
        assert type(value) is float and spec.minval <= value <= spec.maxval
    elif kind == "log":
        low, high = sorted((spec.base**spec.minval, spec.base**spec.maxval))
        assert type(value) is float
        assert low * (1 - 1e-12) <= value <= high * (1 + 1e-12)
    else:
        assert any(type(v) is type(value) and v == value for v in spec.vals), (value, spec.vals)


def test_hparams_have_sample_hparams_shape_and_categoricals_keep_their_type() -> None:
    cfg = config({"max_trials": 30, "max_concurrent_trials": 3, "n_startup_trials": 4})
    transcript = simulate(tpe(cfg), order_seed=2, metric=metric)
    assert len(transcript.creates) == 30
    for create in transcript.creates:
        same_shape(create.hparams, cfg.hyperparameters)
        assert create.hparams.keys() == sample_hparams(SPACE, random.Random(0)).keys()
    kinds = [c.hparams["optimizer"]["kind"] for c in transcript.creates]
    # 1, 1.0 and True are distinct categories (Optuna sees indices), and each keeps its type.
    assert {repr(k) for k in kinds} <= {"'adam'", "[1, 2]", "{'m': 0.9}", "True", "1", "1.0"}
    assert len({repr(k) for k in kinds}) >= 4
    assert all(c.hparams["optimizer"]["empty"] == {} for c in transcript.creates)
    # Trials do not share mutable values with each other or with the searcher's state.
    transcript.creates[0].hparams["optimizer"]["frozen"].append(5)
    assert transcript.creates[1].hparams["optimizer"]["frozen"] == [3, 4]


NAMES = st.sampled_from(["a", "b", "a.b", "b.a", "x"])
SCALARS = st.one_of(
    st.none(),
    st.booleans(),
    st.integers(-3, 3),
    st.floats(-2, 2, allow_nan=False),
    st.text("xy", max_size=2),
)
VALUES = st.recursive(
    SCALARS, lambda inner: st.lists(inner, max_size=2) | st.dictionaries(NAMES, inner, max_size=2)
)


@st.composite
def leaves(draw: st.DrawFn) -> dict[str, Any]:
    kind = draw(st.sampled_from(["const", "int", "double", "log", "categorical"]))
    if kind == "const":
        return {"type": "const", "val": draw(VALUES)}
    if kind == "categorical":
        return {"type": "categorical", "vals": draw(st.lists(VALUES, min_size=1, max_size=4))}
    if kind == "int":
        low = draw(st.integers(-50, 50))
        return {"type": "int", "minval": low, "maxval": low + draw(st.integers(0, 20))}
    low = draw(st.floats(-5, 5))
    spec = {"type": kind, "minval": low, "maxval": low + draw(st.floats(0, 5))}
    if kind == "log":
        spec["base"] = draw(st.sampled_from([10, 2, 0.5, 1, math.e]))
    return spec


SPACES = st.dictionaries(
    NAMES,
    st.recursive(leaves(), lambda inner: st.dictionaries(NAMES, inner, max_size=3), max_leaves=6),
    max_size=4,
)


def searched_names(space: dict[str, Any], route: str = "") -> list[str]:
    """The dotted names of the hyperparameters that vary (consts need no Optuna name)."""
    names: list[str] = []
    for key, spec in space.items():
        name = f"{route}{key}"
        if "type" not in spec:
            names.extend(searched_names(spec, name + "."))
        elif spec["type"] != "const":
            names.append(name)
    return names


@settings(max_examples=60, suppress_health_check=[HealthCheck.too_slow])
@given(space=SPACES, seed=st.integers(0, 2**32 - 1))
def test_any_space_maps_or_is_refused_for_a_name_clash(space: dict[str, Any], seed: int) -> None:
    cfg = config({"max_trials": 3, "n_startup_trials": 1}, space=space, seed=seed)
    names = searched_names(space)
    if len(set(names)) < len(names):
        with pytest.raises(SearcherError, match="flattened with dots"):
            tpe_from_config(cfg)
        return
    transcript = simulate(tpe(cfg), metric=lambda h: float(len(repr(h))))
    assert len(transcript.creates) == 3
    for create in transcript.creates:
        same_shape(create.hparams, cfg.hyperparameters)
        assert json.loads(json.dumps(create.hparams)) == create.hparams


# The search ---------------------------------------------------------------------------------

EXIT_REASONS = st.sampled_from(list(ExitedReason))


@settings(max_examples=40, suppress_health_check=[HealthCheck.too_slow])
@given(
    max_trials=st.integers(1, 6),
    limit=st.integers(0, 4),
    startup=st.integers(0, 3),
    seed=st.integers(0, 2**32 - 1),
    order_seed=st.integers(0, 1000),
    exits=st.dictionaries(st.integers(1, 10), EXIT_REASONS, max_size=4),
    prefix=st.floats(0, 1),
)
def test_search_invariants_and_replay(
    max_trials: int,
    limit: int,
    startup: int,
    seed: int,
    order_seed: int,
    exits: dict[int, ExitedReason],
    prefix: float,
) -> None:
    cfg = config(
        {"max_trials": max_trials, "max_concurrent_trials": limit, "n_startup_trials": startup},
        seed=seed,
    )
    transcript = simulate(tpe(cfg), exits=exits, order_seed=order_seed, metric=metric)
    creates = transcript.creates
    # max_trials trials with valid hyperparameters (an INVALID_HP one is replaced).
    assert valid_creates(transcript, exits) == max_trials
    assert [c.request_id for c in creates] == list(range(1, len(creates) + 1))
    assert transcript.max_open <= (limit or max_trials)
    # Every created trial ends closed, once; one Shutdown, last.
    assert sorted(closed_ids(transcript)) == [c.request_id for c in creates]
    shutdowns = [op for op in transcript.all_ops if isinstance(op, Shutdown)]
    assert shutdowns == [transcript.all_ops[-1]]
    assert shutdowns[0].failure == all(exits.get(c.request_id) == "ERRORED" for c in creates)
    assert transcript.progress[-1] == 1.0
    assert all(0.0 <= p <= 1.0 for p in transcript.progress)
    # Trained to max_length, closed when validated there (not when it exited early).
    assert {op.length for op in transcript.all_ops if isinstance(op, TrainTrial)} == {100}
    closes = {op.request_id for op in transcript.all_ops if isinstance(op, CloseTrial)}
    assert closes == {c.request_id for c in creates if c.request_id not in exits}

    # The order in which concurrent trials finish changes nothing.
    other = simulate(tpe(cfg), exits=exits, order_seed=order_seed + 1, metric=metric)
    assert [c.hparams for c in other.creates] == [c.hparams for c in creates]

    # Replaying a prefix of the events, or loading the state saved there, gives the same future.
    k = int(prefix * len(transcript.events))
    replayed = SearcherRunner(tpe(cfg), seed=0)
    for event in transcript.events[:k]:
        send(replayed, event)
    assert [send(replayed, e) for e in transcript.events[k:]] == transcript.ops[k:]

    original = tpe(cfg)
    for event in transcript.events[:k]:
        send_to_method(original, event)
    restored = tpe(cfg)
    restored.load_state_dict(json.loads(json.dumps(original.state_dict())))
    assert restored.state_dict() == original.state_dict()
    assert [send_to_method(restored, e) for e in transcript.events[k:]] == [
        send_to_method(original, e) for e in transcript.events[k:]
    ]
    assert restored.state_dict() == original.state_dict()


def recorded_run(cfg: ExperimentConfig) -> tuple[SearcherRunner, list[dict[str, Any]], Any]:
    """A runner driven to the end; the method's state after each event; the transcript."""
    runner = SearcherRunner(tpe(cfg), seed=cfg.reproducibility.experiment_seed)
    states: list[dict[str, Any]] = []

    class Recording:
        def __getattr__(self, name: str) -> Any:
            method = getattr(runner, name)
            if not name.startswith("on_") and name != "initial_operations":
                return method

            def call(*args: Any) -> Any:
                ops = method(*args)
                assert isinstance(runner.method, JSONStateSearchMethod)
                states.append(
                    {
                        "method": runner.method.state_dict(),
                        "outstanding": runner.outstanding_operations,
                    }
                )
                return ops

            return call

    exits = {2: ExitedReason.INVALID_HP, 4: ExitedReason.ERRORED}
    transcript = simulate(Recording(), exits=exits, order_seed=5, metric=metric)
    return runner, states, transcript


REPLAY_CONFIG = {"max_trials": 5, "max_concurrent_trials": 2, "n_startup_trials": 2}


def test_replay_at_every_prefix_yields_identical_futures() -> None:
    cfg = config(REPLAY_CONFIG)
    runner, states, transcript = recorded_run(cfg)
    events = runner.events
    assert len(transcript.creates) == 6  # 5 + 1 replaced invalid trial
    for k in range(len(events) + 1):
        replayed = SearcherRunner.restore(
            tpe(cfg),
            json.loads(json.dumps(events[:k])),
            seed=cfg.reproducibility.experiment_seed,
        )
        method = replayed.method
        assert isinstance(method, JSONStateSearchMethod)
        if k > 0:
            assert method.state_dict() == states[k - 1]["method"]
            assert replayed.outstanding_operations == states[k - 1]["outstanding"]
        future = [send(replayed, event) for event in transcript.events[k:]]
        assert future == transcript.ops[k:]
        assert replayed.is_shut_down


def test_state_dict_round_trip_at_every_prefix() -> None:
    cfg = config(REPLAY_CONFIG)
    _, _, transcript = recorded_run(cfg)
    events: list[Event] = transcript.events
    complete = tpe(cfg)
    complete_ops = [send_to_method(complete, event) for event in events]
    for k in range(len(events) + 1):
        original = tpe(cfg)
        for event in events[:k]:
            send_to_method(original, event)
        state = json.loads(json.dumps(original.state_dict()))
        assert state == original.state_dict()
        restored = tpe(cfg)
        restored.load_state_dict(state)
        assert restored.state_dict() == original.state_dict()
        assert restored.progress(SearcherState()) == original.progress(SearcherState())
        assert [send_to_method(restored, e) for e in events[k:]] == complete_ops[k:]
        assert restored.state_dict() == complete.state_dict()


def test_load_state_dict_refuses_other_settings_and_other_draws() -> None:
    cfg = config(REPLAY_CONFIG)
    method = tpe(cfg)
    send_to_method(method, ("initial",))
    state = method.state_dict()
    with pytest.raises(SearcherError, match="cannot be loaded"):
        tpe(config(REPLAY_CONFIG, seed=8)).load_state_dict(state)
    with pytest.raises(SearcherError, match="cannot be loaded"):
        tpe(config({**REPLAY_CONFIG, "max_trials": 4})).load_state_dict(state)
    tampered = copy.deepcopy(state)
    tampered["trials"][0]["params"]["dropout"] = 0.25
    with pytest.raises(SearcherError, match="was Optuna changed"):
        tpe(cfg).load_state_dict(tampered)
    assert state["optuna_calls"] == [["ask", 0], ["ask", 1]]
    for calls in ([["ask", 7]], [["ask", 0], ["tell", 0]], [["ask", 0]], [["ask", 1]], []):
        with pytest.raises(SearcherError, match="Malformed"):
            tpe(cfg).load_state_dict({**state, "optuna_calls": calls})
    other_version = {**state, "optuna_version": "0.1"}
    tpe(cfg).load_state_dict(other_version)  # the same draws: fine
    with pytest.raises(SearcherError, match=r"saved with 0\.1, running"):
        tpe(cfg).load_state_dict({**other_version, "trials": tampered["trials"]})
    # A used method can still load a state: the study is rebuilt.
    used = tpe(cfg)
    send_to_method(used, ("initial",))
    send_to_method(used, ("created", 1))
    used.load_state_dict(state)
    assert used.state_dict() == state


def test_same_seed_same_trials_other_seed_other_trials() -> None:
    def run(seed: int, order_seed: int) -> list[NewTrial]:
        return simulate(tpe(config(seed=seed)), order_seed=order_seed, metric=metric).creates

    first, again, other = run(3, 0), run(3, 9), run(4, 0)
    assert [c.hparams for c in first] == [c.hparams for c in again]
    assert [c.hparams for c in first] != [c.hparams for c in other]


@pytest.mark.parametrize("smaller_is_better", [True, False])
def test_tpe_is_guided_by_the_metric_in_its_direction(smaller_is_better: bool) -> None:
    space = {"x": {"type": "double", "minval": 0.0, "maxval": 1.0}}
    cfg = config(
        {
            "max_trials": 30,
            "max_concurrent_trials": 1,
            "n_startup_trials": 6,
            "smaller_is_better": smaller_is_better,
        },
        space=space,
        seed=11,
    )
    sign = 1.0 if smaller_is_better else -1.0
    transcript = simulate(tpe(cfg), metric=lambda h: sign * (h["x"] - 0.8) ** 2)
    distance = [abs(c.hparams["x"] - 0.8) for c in transcript.creates]
    # The guided draws are much closer to the optimum than the random startup draws.
    assert sum(distance[-10:]) / 10 < 0.5 * sum(distance[:6]) / 6
    assert min(distance[-10:]) < 0.05


# What Optuna is told -------------------------------------------------------------------------


def drive(method: JSONStateSearchMethod, events: list[Event]) -> list[list[Any]]:
    """Deliver events straight to the method (request id n as ``uuid.UUID(int=n)``)."""
    return [send_to_method(method, event) for event in events]


def told(method: JSONStateSearchMethod) -> dict[int, tuple[str | None, float | None]]:
    return {
        t["index"] + 1: (t["result"], t["value"])
        for t in method.state_dict()["trials"]
        if t["told"]
    }


def test_what_optuna_is_told_of_each_ending() -> None:
    cfg = config({"max_trials": 6, "max_concurrent_trials": 6, "n_startup_trials": 10})
    method = tpe(cfg)
    ops = drive(method, [("initial",)])[0]
    assert len(ops) == 12
    events: list[Event] = [("created", n) for n in range(1, 7)]
    events += [
        ("validated", 1, 0.5, 50),
        ("validated", 1, 0.25, 100),  # at max_length: COMPLETE with 0.25, then Close
        ("validated", 2, 0.7, 50),
        ("exited", 2, ExitedReason.USER_REQUESTED_STOP),  # stopped itself: COMPLETE, 0.7
        ("exited", 3, ExitedReason.USER_REQUESTED_STOP),  # never validated: FAIL
        ("validated", 4, 0.6, 50),
        ("exited", 4, ExitedReason.ERRORED),  # FAIL, whatever it reported
        ("exited", 5, ExitedReason.USER_CANCELED),  # FAIL
        ("validated", 6, float("nan"), 100),  # NaN: FAIL (no Optuna warning)
    ]
    out = drive(method, events)
    assert out[7] == [close(1)]
    assert out[-1] == [close(6)]
    for n in range(1, 7):
        drive(method, [("closed", n)])
    assert told(method) == {
        1: ("COMPLETE", 0.25),
        2: ("COMPLETE", 0.7),
        3: ("FAIL", None),
        4: ("FAIL", None),
        5: ("FAIL", None),
        6: ("FAIL", None),
    }
    assert method.state_dict()["shutdown"]


def close(n: int) -> Close:
    return Close(uuid.UUID(int=n))


def test_results_are_told_in_creation_order_when_a_later_trial_needs_them() -> None:
    cfg = config({"max_trials": 4, "max_concurrent_trials": 2, "n_startup_trials": 0})
    method = tpe(cfg)
    drive(method, [("initial",), ("created", 1), ("created", 2)])
    # Trial 2 finishes first: its slot is not used until trial 1 is over (trial 3 is drawn
    # knowing exactly trial 1), and Optuna hears nothing yet.
    assert drive(method, [("validated", 2, 0.1, 100)]) == [[close(2)]]
    assert drive(method, [("closed", 2)]) == [[]]
    assert told(method) == {}
    assert drive(method, [("validated", 1, 0.3, 100)]) == [[close(1)]]
    (ops,) = drive(method, [("closed", 1)])
    assert [type(op).__name__ for op in ops] == [
        "Create",
        "ValidateAfter",
        "Create",
        "ValidateAfter",
    ]
    assert told(method) == {1: ("COMPLETE", 0.3), 2: ("COMPLETE", 0.1)}
    calls = method.state_dict()["optuna_calls"]
    assert calls == [["ask", 0], ["ask", 1], ["tell", 0], ["ask", 2], ["tell", 1], ["ask", 3]]


def test_invalid_hyperparameters_are_replaced_at_most_so_often() -> None:
    cfg = config({"max_trials": 1, "max_concurrent_trials": 1, "n_startup_trials": 1})
    exits = {n: ExitedReason.INVALID_HP for n in range(1, MAX_INVALID_REPLACEMENTS + 5)}
    transcript = simulate(tpe(cfg), exits=exits)
    assert len(transcript.creates) == MAX_INVALID_REPLACEMENTS + 1
    assert transcript.all_ops[-1] == Shutdown(failure=False)


def test_every_trial_errored_is_a_failure() -> None:
    cfg = config({"max_trials": 3, "max_concurrent_trials": 0})
    exits = {n: ExitedReason.ERRORED for n in range(1, 4)}
    transcript = simulate(tpe(cfg), exits=exits)
    assert len(transcript.creates) == 3
    assert sum(isinstance(op, NewTrial) for op in transcript.ops[0]) == 3  # no limit
    assert transcript.all_ops[-1] == Shutdown(failure=True)


def test_out_of_order_calls_are_refused() -> None:
    method = tpe(config())
    with pytest.raises(SearcherError, match="Unknown trial request id"):
        method.on_trial_created(SearcherState(), uuid.UUID(int=1))
    method.initial_operations(SearcherState())
    with pytest.raises(SearcherError, match="already called"):
        method.initial_operations(SearcherState())
    with pytest.raises(SearcherError, match="Unknown trial request id"):
        method.on_trial_closed(SearcherState(), uuid.UUID(int=9))


# What needs what installed ------------------------------------------------------------------


def test_tpe_needs_only_optuna(monkeypatch: pytest.MonkeyPatch) -> None:
    assert missing_optuna_requirements("tpe") is None
    monkeypatch.setitem(sys.modules, "optuna", None)  # as if not installed
    message = missing_optuna_requirements("tpe")
    assert message is not None and "pip install 'pedl[bayes]'" in message
    with pytest.raises(SearcherError, match=r"needs Optuna.*pedl\[bayes\]"):
        tpe_from_config(config())


def test_gp_refuses_clearly_without_torch(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setitem(sys.modules, "torch", None)  # as if not installed (it is not, here)
    message = missing_optuna_requirements("gp")
    assert message is not None and "PyTorch" in message and "pip install torch" in message
    with pytest.raises(SearcherError, match="gp searcher needs PyTorch"):
        gp_from_config(config(name="gp"))
    assert "not a Bayesian searcher" in str(missing_optuna_requirements("random"))


@pytest.mark.skipif(
    importlib.util.find_spec("torch") is None or importlib.util.find_spec("scipy") is None,
    reason="gp needs torch and scipy, which PEDL does not install",
)
def test_gp_runs_where_torch_is_installed() -> None:
    cfg = config({"max_trials": 4, "n_startup_trials": 2}, name="gp")
    method = gp_from_config(cfg)
    transcript = simulate(method, order_seed=1, metric=metric)
    assert len(transcript.creates) == 4
    for create in transcript.creates:
        same_shape(create.hparams, cfg.hyperparameters)
    assert transcript.all_ops[-1] == Shutdown()


def test_builders_refuse_other_searchers() -> None:
    with pytest.raises(SearcherError, match="Not a tpe searcher config"):
        tpe_from_config(config(name="gp"))


def test_importing_pedl_searcher_does_not_import_optuna() -> None:
    check = (
        "import sys, pedl.searcher, pedl.config; "
        "print(sorted(m for m in sys.modules if m.split('.')[0] == 'optuna'))"
    )
    result = subprocess.run(
        [sys.executable, "-c", check],
        capture_output=True,
        text=True,
        check=True,
        timeout=scaled(60),
    )
    assert result.stdout.strip() == "[]"
