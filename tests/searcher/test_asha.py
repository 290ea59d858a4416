"""async_halving and adaptive_asha as pure logic: explicit rules, then property tests over
simulated experiments (random event orders, early exits, metrics), checked against a small
independent model of the promotion rule, and replays of the event log and of saved states."""

from __future__ import annotations

import json
import math
import random
import uuid
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from searcher_sim import Event, send, simulate

from pedl.config import ConfigError, parse_config
from pedl.searcher import (
    MAX_INVALID_REPLACEMENTS,
    AdaptiveASHASearch,
    ASHABracket,
    AsyncHalvingSearch,
    Close,
    CloseTrial,
    Create,
    ExitedReason,
    HalvingSearch,
    NewTrial,
    SearcherError,
    SearcherRunner,
    SearcherState,
    Shutdown,
    TrainTrial,
    TrialOperation,
    ValidateAfter,
    make_search_method,
    plan_brackets,
    rung_lengths,
)


def sample(rng: random.Random) -> dict[str, Any]:
    return {"lr": rng.uniform(0.001, 0.1), "units": rng.choice([4, 8, 16])}


def halving(**kwargs: Any) -> AsyncHalvingSearch:
    args: dict[str, Any] = {"sample": sample, "seed": 0, **kwargs}
    return AsyncHalvingSearch(**args)


def ops_of(ops: list[TrialOperation]) -> list[tuple[Any, ...]]:
    """Operations without hyperparameters and seeds, for exact comparisons."""
    out: list[tuple[Any, ...]] = []
    for op in ops:
        match op:
            case NewTrial():
                out.append(("create", op.request_id))
            case TrainTrial():
                out.append(("train", op.request_id, op.length))
            case CloseTrial():
                out.append(("close", op.request_id))
            case Shutdown():
                out.append(("shutdown", op.failure))
    return out


def creates(first: int, last: int, length: int) -> list[tuple[Any, ...]]:
    return [x for i in range(first, last + 1) for x in (("create", i), ("train", i, length))]


# rungs and brackets ------------------------------------------------------------------------


def test_rung_lengths_divide_max_length_by_powers_of_the_divisor() -> None:
    assert rung_lengths(16, 3, 2) == [4, 8, 16]
    assert rung_lengths(1000, 4, 4) == [15, 62, 250, 1000]
    assert rung_lengths(40, 2, 2) == [20, 40]
    assert rung_lengths(7, 1, 4) == [7]
    assert rung_lengths(2, 3, 4) == [1, 1, 2]  # at least 1: lengths can repeat
    assert rung_lengths(10, 2000, 2)[:3] == [1, 1, 1]  # no overflow
    with pytest.raises(SearcherError):
        rung_lengths(0, 2, 2)
    with pytest.raises(SearcherError):
        rung_lengths(10, 2, 1.0)


def test_modes_choose_brackets_as_determined_does() -> None:
    def rungs(mode: Any, **kw: Any) -> list[int]:
        args = {"max_length": 1000, "max_trials": 100, "divisor": 4.0, **kw}
        return [b.num_rungs for b in plan_brackets(mode=mode, **args)]

    # max_rungs 5 is lowered to floor(log4(100)) + 1 = 4 (max_trials) ...
    assert rungs("aggressive") == [4]
    assert rungs("standard") == [4, 3, 2]  # (4 - 1) // 2 + 1 = 2 .. 4
    assert rungs("conservative") == [4, 3, 2, 1]
    # ... and to floor(log4(max_length)) + 1, exactly (4**3 = 64 <= 64)
    assert rungs("conservative", max_length=64, max_trials=10_000) == [4, 3, 2, 1]
    assert rungs("conservative", max_length=63, max_trials=10_000) == [3, 2, 1]
    assert rungs("standard", max_trials=10_000, max_rungs=5, max_length=10**6) == [5, 4, 3]
    assert rungs("standard", bracket_rungs=[2, 5, 3]) == [5, 3, 2]  # given: used as is


def test_trials_and_concurrency_split_across_brackets() -> None:
    brackets = plan_brackets(
        max_length=1000, max_trials=100, divisor=4, mode="conservative", max_concurrent_trials=16
    )
    # weights 4**3/4, 4**2/3, 4/2, 1/1: floors 65, 21, 8, 4; the first takes the 2 left over
    assert [b.max_trials for b in brackets] == [67, 21, 8, 4]
    assert [b.max_concurrent_trials for b in brackets] == [4, 4, 4, 4]
    assert brackets[0] == ASHABracket(4, (15, 62, 250, 1000), 67, 4)
    split = plan_brackets(
        max_length=1000, max_trials=100, divisor=4, mode="conservative", max_concurrent_trials=6
    )
    assert [b.max_concurrent_trials for b in split] == [2, 2, 1, 1]
    raised = plan_brackets(
        max_length=1000, max_trials=100, divisor=4, mode="conservative", max_concurrent_trials=2
    )
    assert [b.max_concurrent_trials for b in raised] == [1, 1, 1, 1]  # one per bracket at least
    default = plan_brackets(
        max_length=1000, max_trials=100, divisor=4, mode="conservative", max_concurrent_trials=0
    )
    assert [b.max_concurrent_trials for b in default] == [4, 4, 4, 4]  # max(4 trials, divisor)


@given(
    max_trials=st.integers(1, 60),
    divisor=st.sampled_from([1.5, 2.0, 3.0, 4.0]),
    bracket_rungs=st.lists(st.integers(1, 8), max_size=10),
    mode=st.sampled_from(["aggressive", "standard", "conservative"]),
)
def test_brackets_never_hold_more_than_max_trials(
    max_trials: int, divisor: float, bracket_rungs: list[int], mode: Any
) -> None:
    brackets = plan_brackets(
        max_length=500,
        max_trials=max_trials,
        divisor=divisor,
        mode=mode,
        bracket_rungs=bracket_rungs,
    )
    assert sum(b.max_trials for b in brackets) == max_trials
    assert all(b.max_trials >= 1 for b in brackets)
    assert [b.num_rungs for b in brackets] == sorted((b.num_rungs for b in brackets), reverse=True)


# the promotion rule, step by step --------------------------------------------------------


def test_promotion_of_the_top_one_over_divisor_as_results_arrive() -> None:
    runner = SearcherRunner(halving(max_length=40, num_rungs=2, max_trials=4, divisor=2))
    assert ops_of(runner.initial_operations()) == creates(1, 4, 20)
    for i in range(1, 5):
        assert runner.on_trial_created(i) == []
    assert runner.on_validation_completed(1, 0.5, 20) == []  # 1 result: floor(1/2) = 0
    assert ops_of(runner.on_validation_completed(2, 0.3, 20)) == [("train", 2, 40)]  # best of 2
    assert ops_of(runner.on_validation_completed(3, 0.1, 20)) == [("train", 3, 40)]  # best of 3
    # 4 results: the best 2 (3 and 2) are promoted already; the rung is final: 1 and 4 close
    assert ops_of(runner.on_validation_completed(4, 0.9, 20)) == [("close", 1), ("close", 4)]
    assert runner.on_trial_closed(1) == []
    assert runner.on_trial_closed(4) == []
    assert ops_of(runner.on_validation_completed(2, 0.2, 40)) == [("close", 2)]
    assert ops_of(runner.on_validation_completed(3, 0.4, 40)) == [("close", 3)]
    assert runner.on_trial_closed(2) == []
    assert runner.progress() < 1.0
    assert ops_of(runner.on_trial_closed(3)) == [("shutdown", False)]
    assert runner.progress() == 1.0


def test_a_waiting_trial_is_promoted_later_and_continues_to_the_next_rung() -> None:
    """With one trial at a time, trial 1 waits at rung 0 (holding no slot) while trial 2
    runs; trial 2's worse result promotes trial 1, which is asked to train on to 40 (the
    engine restarts it from its checkpoint) before any new trial starts."""
    runner = SearcherRunner(
        halving(max_length=40, num_rungs=2, max_trials=3, divisor=2, max_concurrent_trials=1)
    )
    assert ops_of(runner.initial_operations()) == creates(1, 1, 20)
    runner.on_trial_created(1)
    assert ops_of(runner.on_validation_completed(1, 0.2, 20)) == creates(2, 2, 20)
    runner.on_trial_created(2)
    assert ops_of(runner.on_validation_completed(2, 0.7, 20)) == [("train", 1, 40)]
    assert ops_of(runner.on_validation_completed(1, 0.1, 40)) == [("close", 1), *creates(3, 3, 20)]
    runner.on_trial_closed(1)
    runner.on_trial_created(3)
    # 3 results: floor(3/2) = 1 (trial 1, promoted); the rung is final: 2 and 3 close
    assert ops_of(runner.on_validation_completed(3, 0.5, 20)) == [("close", 3), ("close", 2)]
    runner.on_trial_closed(3)
    assert ops_of(runner.on_trial_closed(2)) == [("shutdown", False)]


def test_larger_is_better_and_ties_go_to_the_earlier_result() -> None:
    runner = SearcherRunner(
        halving(max_length=8, num_rungs=2, max_trials=4, divisor=2, smaller_is_better=False)
    )
    runner.initial_operations()
    for i in range(1, 5):
        runner.on_trial_created(i)
    assert runner.on_validation_completed(1, 0.5, 4) == []
    # a tie for the best of 2: trial 1 reported first
    assert ops_of(runner.on_validation_completed(2, 0.5, 4)) == [("train", 1, 8)]
    assert runner.on_validation_completed(3, 0.4, 4) == []
    assert ops_of(runner.on_validation_completed(4, 0.9, 4)) == [
        ("train", 4, 8),
        ("close", 2),
        ("close", 3),
    ]


def test_early_exits_count_as_the_worst_metric() -> None:
    runner = SearcherRunner(halving(max_length=8, num_rungs=2, max_trials=4, divisor=2))
    runner.initial_operations()
    for i in range(1, 5):
        runner.on_trial_created(i)
    assert runner.on_trial_exited_early(1, ExitedReason.USER_REQUESTED_STOP) == []
    assert runner.on_trial_closed(1) == []
    # 2 results: the best is trial 2, whatever its metric (1 is worse than any)
    assert ops_of(runner.on_validation_completed(2, 1e9, 4)) == [("train", 2, 8)]
    assert runner.on_trial_exited_early(3, ExitedReason.ERRORED) == []
    runner.on_trial_closed(3)
    # 4 results: best 2 are 4 and 2; an exited trial is never asked to close again
    assert ops_of(runner.on_validation_completed(4, 5.0, 4)) == [("train", 4, 8)]
    assert runner.on_trial_exited_early(4, ExitedReason.USER_CANCELED) == []
    assert runner.on_trial_closed(4) == []
    assert ops_of(runner.on_validation_completed(2, 1.0, 8)) == [("close", 2)]
    assert ops_of(runner.on_trial_closed(2)) == [("shutdown", False)]


def test_every_trial_erroring_fails_the_search() -> None:
    runner = SearcherRunner(halving(max_length=8, num_rungs=2, max_trials=2, divisor=2))
    runner.initial_operations()
    runner.on_trial_created(1)
    runner.on_trial_exited_early(1, ExitedReason.ERRORED)
    runner.on_trial_closed(1)
    runner.on_trial_created(2)
    runner.on_trial_exited_early(2, ExitedReason.ERRORED)
    assert ops_of(runner.on_trial_closed(2)) == [("shutdown", True)]


def test_invalid_hp_before_any_result_is_replaced_after_it_counts_as_worst() -> None:
    runner = SearcherRunner(
        halving(max_length=8, num_rungs=2, max_trials=2, divisor=2, max_concurrent_trials=2)
    )
    runner.initial_operations()
    runner.on_trial_created(1)
    # before any result: a new draw takes its place (not counted toward max_trials)
    assert ops_of(runner.on_trial_exited_early(1, ExitedReason.INVALID_HP)) == creates(3, 3, 4)
    assert runner.on_trial_closed(1) == []
    runner.on_trial_created(2)
    runner.on_trial_created(3)
    assert runner.on_validation_completed(2, 0.5, 4) == []
    assert ops_of(runner.on_validation_completed(3, 0.7, 4)) == [("train", 2, 8), ("close", 3)]
    # after a result: its results stand, the exit is the worst result at rung 1; no new draw
    assert runner.on_trial_exited_early(2, ExitedReason.INVALID_HP) == []
    runner.on_trial_closed(3)
    assert ops_of(runner.on_trial_closed(2)) == [("shutdown", False)]


def test_invalid_hp_replacements_are_bounded() -> None:
    transcript = simulate(
        halving(max_length=4, num_rungs=2, max_trials=2, divisor=2, max_concurrent_trials=1),
        exits={i: ExitedReason.INVALID_HP for i in range(1, MAX_INVALID_REPLACEMENTS + 10)},
        max_events=20_000,
    )
    assert len(transcript.creates) == MAX_INVALID_REPLACEMENTS + 2
    assert transcript.all_ops[-1] == Shutdown(failure=False)


def test_stop_once_continues_the_top_or_stops_the_trial() -> None:
    runner = SearcherRunner(
        halving(max_length=16, num_rungs=3, max_trials=4, divisor=2, stop_once=True)
    )
    assert ops_of(runner.initial_operations()) == creates(1, 4, 4)
    for i in range(1, 5):
        runner.on_trial_created(i)
    # best of the results so far, at least one: continue at once, never wait
    assert ops_of(runner.on_validation_completed(1, 0.5, 4)) == [("train", 1, 8)]
    assert ops_of(runner.on_validation_completed(2, 0.6, 4)) == [("close", 2)]
    assert ops_of(runner.on_validation_completed(3, 0.1, 4)) == [("train", 3, 8)]
    assert ops_of(runner.on_validation_completed(4, 0.3, 4)) == [("train", 4, 8)]  # 2nd of 4
    assert ops_of(runner.on_validation_completed(1, 0.5, 8)) == [("train", 1, 16)]
    assert runner.on_trial_exited_early(3, ExitedReason.ERRORED) == []
    assert ops_of(runner.on_validation_completed(4, 0.6, 8)) == [("close", 4)]  # 2nd of 3
    assert ops_of(runner.on_validation_completed(1, 0.5, 16)) == [("close", 1)]
    for i in (2, 3, 4):
        runner.on_trial_closed(i)
    assert ops_of(runner.on_trial_closed(1)) == [("shutdown", False)]


def test_repeated_rung_lengths_are_entered_at_once() -> None:
    # max_length 2 over 3 rungs of divisor 2: lengths 1, 1, 2
    runner = SearcherRunner(
        halving(max_length=2, num_rungs=3, max_trials=2, divisor=2, max_concurrent_trials=2)
    )
    assert ops_of(runner.initial_operations()) == creates(1, 2, 1)
    runner.on_trial_created(1)
    runner.on_trial_created(2)
    assert runner.on_validation_completed(1, 0.5, 1) == []
    # trial 2 is the best of 2 at rung 0, enters rung 1 (length 1 again) with the same
    # result, where 2 trials... it is alone: floor(1/2) = 0; rungs 0 and 1 are final
    assert ops_of(runner.on_validation_completed(2, 0.1, 1)) == [("close", 1), ("close", 2)]


def test_validations_short_of_the_rung_and_nan_metrics() -> None:
    runner = SearcherRunner(halving(max_length=40, num_rungs=2, max_trials=2, divisor=2))
    runner.initial_operations()
    runner.on_trial_created(1)
    runner.on_trial_created(2)
    assert runner.on_validation_completed(1, 0.0, 10) == []  # min_validation_period: not a rung
    assert runner.on_validation_completed(1, math.nan, 20) == []  # NaN: the worst
    assert ops_of(runner.on_validation_completed(2, 99.0, 20)) == [("train", 2, 40), ("close", 1)]


def test_adaptive_brackets_each_run_their_own_halving() -> None:
    def search() -> AdaptiveASHASearch:
        return AdaptiveASHASearch(
            sample=sample,
            max_length=16,
            max_trials=6,
            divisor=2,
            bracket_rungs=[3, 1],
            max_concurrent_trials=2,
            seed=1,
        )

    # weights 2**2/3 and 1: floor(6 * 4/7) = 3 and floor(6 * 3/7) = 2; the first bracket
    # takes the one left
    assert [(b.num_rungs, b.lengths, b.max_trials) for b in search().brackets] == [
        (3, (4, 8, 16), 4),
        (1, (16,), 2),
    ]
    assert ops_of(SearcherRunner(search()).initial_operations()) == [
        ("create", 1),
        ("train", 1, 4),
        ("create", 2),
        ("train", 2, 16),
    ]
    transcript = simulate(search(), order_seed=4, metric=lambda h: h["lr"])
    assert len(transcript.creates) == 6
    trains = {op.length for op in transcript.all_ops if isinstance(op, TrainTrial)}
    assert trains == {4, 8, 16}
    assert transcript.all_ops[-1] == Shutdown(failure=False)


# configs -----------------------------------------------------------------------------------

YAML = """
hyperparameters:
  global_batch_size: 16
  lr: {type: double, minval: 0.001, maxval: 0.1}
searcher:
  name: %s
  metric: loss
  max_trials: 8
%s
"""


def test_config_builds_the_searchers_with_max_length_or_max_time() -> None:
    asha = parse_config(YAML % ("adaptive_asha", "  max_length: {batches: 64}\n  mode: aggressive"))
    method = make_search_method(asha)
    assert isinstance(method, AdaptiveASHASearch)
    assert [b.lengths for b in method.brackets] == [(16, 64)]  # rungs: floor(log4(8)) + 1
    timed = parse_config(
        YAML % ("async_halving", "  num_rungs: 2\n  time_metric: records\n  max_time: 640")
    )
    assert (timed.searcher_unit, timed.searcher_max_length) == ("records", 640)
    method = make_search_method(timed)
    assert isinstance(method, AsyncHalvingSearch)
    assert method.brackets == (ASHABracket(2, (160, 640), 8, 8),)
    both = parse_config(
        YAML
        % ("adaptive_asha", "  max_length: {batches: 5}\n  time_metric: batches\n  max_time: 50")
    )
    assert (both.searcher_unit, both.searcher_max_length) == ("batches", 50)  # max_time wins


@pytest.mark.parametrize(
    ("fields", "path", "words"),
    [
        ("  time_metric: val_loss\n  max_time: 10", "searcher.time_metric", "val_loss"),
        ("  time_metric: epochs\n  max_time: 3", "searcher.time_metric", "records_per_epoch"),
        ("  max_length: {batches: 8}\n  max_time: 3", "searcher.time_metric", "max_time"),
        ("  max_length: {batches: 8}\n  bracket_rungs: [0]", "searcher.bracket_rungs[0]", ""),
    ],
)
def test_time_metrics_pedl_cannot_train_to_are_refused(fields: str, path: str, words: str) -> None:
    """A Trial class (no script entrypoint) trains by PEDL's length units only."""
    with pytest.raises(ConfigError) as info:
        parse_config(YAML % ("adaptive_asha", fields))
    (issue,) = info.value.issues
    assert issue.path == path and words in issue.message
    if "val_loss" in fields:
        assert "only a script's own training loop can report" in issue.message


def test_max_time_in_records_needs_the_batch_size() -> None:
    text = YAML % ("async_halving", "  num_rungs: 2\n  time_metric: records\n  max_time: 64")
    with pytest.raises(ConfigError) as info:
        parse_config(text.replace("  global_batch_size: 16\n", ""))
    (issue,) = info.value.issues
    assert issue.path == "hyperparameters.global_batch_size"
    assert "searcher.max_time is in records" in issue.message


def test_a_time_metric_a_script_reports_measures_its_lengths() -> None:
    """Determined 0.38's meaning: ``time_metric`` names a validation metric whose values are
    the trial's progress; a script entrypoint (its own training loop reports it) may name one,
    and the searcher's lengths are values of it, up to ``max_time``."""
    text = YAML % ("adaptive_asha", "  time_metric: samples\n  max_time: 800")
    config = parse_config(text + "entrypoint: python3 train.py\n")
    assert config.searcher.reported_time_metric == "samples"  # type: ignore[union-attr]
    assert config.searcher_max_length == 800
    method = make_search_method(config)
    assert isinstance(method, AdaptiveASHASearch)
    assert max(b.lengths[-1] for b in method.brackets) == 800
    for unit in ("batches", "records"):
        timed = parse_config(YAML % ("adaptive_asha", f"  time_metric: {unit}\n  max_time: 64"))
        assert timed.searcher.reported_time_metric is None  # type: ignore[union-attr]


# simulated experiments: properties -----------------------------------------------------------

REASONS = [
    ExitedReason.ERRORED,
    ExitedReason.INVALID_HP,
    ExitedReason.USER_REQUESTED_STOP,
    ExitedReason.USER_CANCELED,
]


@dataclass
class Run:
    """A simulated experiment: every event sent and the operations it got back."""

    runner: SearcherRunner
    log: list[tuple[Event, list[TrialOperation]]] = field(default_factory=list)
    max_active: int = 0
    max_counted: int = 0
    replaced: set[int] = field(default_factory=set)
    cut: int = 0
    snapshot: dict[str, Any] | None = None


def active_trials(runner: SearcherRunner) -> set[int]:
    """Trials holding a slot: given a creation or training the engine has not answered."""
    return {
        op.request_id
        for op in runner.outstanding_operations
        if isinstance(op, NewTrial | TrainTrial)
    }


def drive(
    method: HalvingSearch,
    rng: random.Random,
    *,
    metric: Callable[[int, int], float],
    exit_rate: float,
    kill_rate: float,
    cut: int,
) -> Run:
    """Carry out the method's operations in a random order across trials (in order within
    one), with early exits at a ``ValidateAfter`` (``exit_rate``), users killing waiting
    trials (``kill_rate``) and validations short of the rung; snapshot the method's state
    after ``cut`` events."""
    run = Run(SearcherRunner(method, seed=5), cut=cut)
    pending: list[TrialOperation] = []
    validated: dict[int, int] = {}
    has_result: set[int] = set()
    closed: set[int] = set()
    created: set[int] = set()

    def deliver(event: Event) -> None:
        ops = send(run.runner, event)
        run.log.append((event, ops))
        pending.extend(ops)
        kind, rid = event[0], event[1] if len(event) > 1 else 0
        if kind == "validated":
            validated[rid] = event[3]
        if kind == "exited" and event[2] == ExitedReason.INVALID_HP and rid not in has_result:
            run.replaced.add(rid)
        if kind == "closed":
            closed.add(rid)
        created.update(op.request_id for op in ops if isinstance(op, NewTrial))
        counted = len(created) - min(len(run.replaced), MAX_INVALID_REPLACEMENTS)
        run.max_counted = max(run.max_counted, counted)
        run.max_active = max(run.max_active, len(active_trials(run.runner)))
        if len(run.log) == cut:
            run.snapshot = json.loads(json.dumps(method.state_dict()))

    def end(rid: int, reason: ExitedReason) -> None:
        pending[:] = [p for p in pending if isinstance(p, Shutdown) or p.request_id != rid]
        deliver(("exited", rid, reason))
        deliver(("closed", rid))

    deliver(("initial",))
    while any(not isinstance(op, Shutdown) for op in pending):
        assert len(run.log) < 5000, "the search never shut down"
        busy = {op.request_id for op in pending if not isinstance(op, Shutdown)}
        waiting = sorted(created - closed - busy)
        if waiting and rng.random() < kill_rate:
            end(rng.choice(waiting), ExitedReason.USER_CANCELED)
            continue
        heads: dict[int, int] = {}
        for i, op in enumerate(pending):
            if not isinstance(op, Shutdown):
                heads.setdefault(op.request_id, i)
        op = pending.pop(rng.choice(sorted(heads.values())))
        if isinstance(op, NewTrial):
            deliver(("created", op.request_id))
        elif isinstance(op, TrainTrial):
            rid, length = op.request_id, op.length
            if rng.random() < exit_rate:
                end(rid, rng.choice(REASONS))
                continue
            short = rng.randint(validated.get(rid, 0) + 1, length)
            if short < length and rng.random() < 0.3:
                deliver(("validated", rid, metric(rid, short), short))  # not a rung result
            has_result.add(rid)
            deliver(("validated", rid, metric(rid, length), length))
        elif isinstance(op, CloseTrial):
            deliver(("closed", op.request_id))
    return run


WORST = (1, 0.0)


class PromotionModel:
    """The promotion rule, written plainly, to check the searcher's operations against.

    Each trial heads for a rung; its result there (the metric, or the worst for an exit)
    is ranked by (metric, order of arrival); a trial among the best floor(n / divisor) of a
    rung's n results is promoted (an exited one enters the next rung at once with the worst);
    with stop_once, a trial continues iff it is among the best max(floor(n / divisor), 1)
    when it reports, and is stopped otherwise.
    """

    def __init__(
        self, method: HalvingSearch, bracket_of: dict[int, int], *, stop_once: bool, sign: float
    ) -> None:
        self.brackets = method.brackets
        self.bracket_of = bracket_of
        self.divisor = method.divisor
        self.stop_once = stop_once
        self.sign = sign
        self.rungs: list[list[list[Any]]] = [[[] for _ in b.lengths] for b in self.brackets]
        self.heading: dict[int, int] = {}
        self.reported: dict[int, bool] = {}
        self.exited: set[int] = set()
        self.replaced: set[int] = set()
        self.promoted: set[tuple[int, int]] = set()  # (trial, rung it was promoted to)
        self.expect_close: set[int] = set()
        self.seq = 0
        self.created: list[int] = []

    def counted(self, b: int) -> int:
        return sum(1 for t in self.created if self.bracket_of[t] == b and t not in self.replaced)

    def result(self, t: int, value: tuple[int, float]) -> None:
        b, k = self.bracket_of[t], self.heading[t]
        rung = self.rungs[b][k]
        entry = (value, self.seq, t)
        self.seq += 1
        rung.append(entry)
        rung.sort()
        self.reported[t] = True
        top = len(self.brackets[b].lengths) - 1
        if k == top:
            if t not in self.exited:
                self.expect_close.add(t)
            return
        n = len(rung)
        if self.stop_once:
            if t in self.exited:
                return
            if rung.index(entry) < max(int(n / self.divisor), 1):
                self.promote(t)
            else:
                self.expect_close.add(t)
            return
        for _, _, best in list(rung[: int(n / self.divisor)]):
            if (best, k + 1) not in self.promoted:
                self.promote(best)

    def promote(self, t: int) -> None:
        self.heading[t] += 1
        self.reported[t] = False
        self.promoted.add((t, self.heading[t]))
        if t in self.exited:
            self.result(t, WORST)

    def final(self, b: int, k: int) -> bool:
        """Whether no trial can still arrive at rung k of bracket b."""
        if self.counted(b) < self.brackets[b].max_trials:
            return False
        return not any(
            self.heading[t] <= k and not self.reported[t] and t not in self.replaced
            for t in self.created
            if self.bracket_of[t] == b
        )


def check_against_model(run: Run, method: HalvingSearch, *, stop_once: bool, sign: float) -> None:
    """Replay the run's events into :class:`PromotionModel`; every ``ValidateAfter`` past
    rung 0 must be a promotion it made, every ``Close`` must be of a trial it would not
    promote (in a final rung), and every promotion of a trial still running must be asked."""
    trials = method.state_dict()["trials"]
    bracket_of = {uuid.UUID(t["request_id"]).int: t["bracket"] for t in trials}
    model = PromotionModel(method, bracket_of, stop_once=stop_once, sign=sign)
    for event, ops in run.log:
        kind = event[0]
        if kind == "validated":
            t, value, length = event[1], event[2], event[3]
            lengths = model.brackets[bracket_of[t]].lengths
            if length >= lengths[model.heading[t]] and not model.reported[t]:
                model.result(t, WORST if math.isnan(value) else (0, value * model.sign))
        elif kind == "exited":
            t = event[1]
            model.exited.add(t)
            if event[2] == ExitedReason.INVALID_HP and t in run.replaced:
                model.replaced.add(t)
            elif not model.reported[t]:
                model.result(t, WORST)
        for op in ops:
            if isinstance(op, NewTrial):
                model.created.append(op.request_id)
                model.heading[op.request_id] = 0
                model.reported[op.request_id] = False
            elif isinstance(op, TrainTrial):
                t = op.request_id
                k = model.brackets[bracket_of[t]].lengths.index(op.length)
                assert k == model.heading[t] and not model.reported[t], (event, op)
                if k > 0:
                    assert (t, k) in model.promoted, f"{op} without a promotion"
            elif isinstance(op, CloseTrial):
                t = op.request_id
                assert t in model.expect_close or (
                    model.reported[t] and (t, model.heading[t] + 1) not in model.promoted
                ), f"{op}: the trial may still be promoted"
                if not stop_once and t not in model.expect_close:
                    assert model.final(bracket_of[t], model.heading[t]), f"{op}: rung not final"
    issued = {
        (op.request_id, op.length) for _, ops in run.log for op in ops if isinstance(op, TrainTrial)
    }
    for t, k in model.promoted:
        if t not in model.exited:
            assert (t, model.brackets[bracket_of[t]].lengths[k]) in issued, f"{t} promoted to {k}"


@st.composite
def searches(draw: st.DrawFn) -> tuple[Callable[[], HalvingSearch], dict[str, Any]]:
    divisor = draw(st.sampled_from([2.0, 3.0, 4.0]))
    stop_once = draw(st.booleans())
    smaller = draw(st.booleans())
    max_trials = draw(st.integers(1, 14))
    concurrent = draw(st.integers(0, 5))
    seed = draw(st.integers(0, 2**16))
    if draw(st.booleans()):
        rungs = draw(st.integers(1, 4))
        max_length = int(divisor ** (rungs - 1)) * draw(st.integers(1, 3))

        def make() -> HalvingSearch:
            return AsyncHalvingSearch(
                sample=sample,
                max_length=max_length,
                num_rungs=rungs,
                max_trials=max_trials,
                divisor=divisor,
                max_concurrent_trials=concurrent,
                smaller_is_better=smaller,
                stop_once=stop_once,
                seed=seed,
            )

        limit = min(concurrent, max_trials) if concurrent else None
    else:
        mode: Any = draw(st.sampled_from(["aggressive", "standard", "conservative"]))
        max_length = int(divisor**3) * draw(st.integers(1, 3))
        bracket_rungs = draw(st.sampled_from([[], [], [2, 1], [3, 3, 1]]))

        def make() -> HalvingSearch:
            return AdaptiveASHASearch(
                sample=sample,
                max_length=max_length,
                max_trials=max_trials,
                divisor=divisor,
                mode=mode,
                max_rungs=4,
                bracket_rungs=bracket_rungs,
                max_concurrent_trials=concurrent,
                smaller_is_better=smaller,
                stop_once=stop_once,
                seed=seed,
            )

        brackets = len(make().brackets)
        limit = max(concurrent, brackets) if concurrent else None
    info = {"stop_once": stop_once, "smaller": smaller, "max_trials": max_trials, "limit": limit}
    return make, info


def metric_table(seed: int) -> Callable[[int, int], float]:
    def metric(rid: int, length: int) -> float:
        r = random.Random(f"{seed}:{rid}:{length}")
        return math.nan if r.random() < 0.05 else float(r.choice([0, 1, 2, 3, 0.5, -1]))

    return metric


PROPERTY = settings(max_examples=80, suppress_health_check=[HealthCheck.too_slow])


@PROPERTY
@given(
    search=searches(),
    order=st.integers(0, 2**16),
    exit_rate=st.sampled_from([0.0, 0.1, 0.3]),
    kill_rate=st.sampled_from([0.0, 0.05]),
    cut=st.floats(0.0, 1.0),
)
def test_simulated_searches_keep_the_rules(
    search: tuple[Callable[[], HalvingSearch], dict[str, Any]],
    order: int,
    exit_rate: float,
    kill_rate: float,
    cut: float,
) -> None:
    make, info = search
    method = make()
    rng = random.Random(order)
    run = drive(
        method,
        rng,
        metric=metric_table(order),
        exit_rate=exit_rate,
        kill_rate=kill_rate,
        cut=1 + int(cut * 40),
    )
    all_ops = [op for _, ops in run.log for op in ops]
    news = [op.request_id for op in all_ops if isinstance(op, NewTrial)]
    # never more than max_trials trials (a replaced InvalidHP draw does not count), all used
    assert run.max_counted <= info["max_trials"]
    assert len(news) - len(run.replaced) == info["max_trials"]
    # never more than max_concurrent_trials active (adaptive: at least one per bracket)
    assert run.max_active <= method.max_concurrent_trials
    if info["limit"] is not None:
        assert method.max_concurrent_trials == info["limit"]
    # every created trial ends closed; one Shutdown, last
    closed = [e[1] for e, _ in run.log if e[0] == "closed"]
    assert sorted(closed) == sorted(news)
    assert [op for op in all_ops if isinstance(op, Shutdown)] == [all_ops[-1]]
    assert run.runner.progress() == 1.0
    # promotions, continuations and closes follow the rule
    sign = 1.0 if info["smaller"] else -1.0
    check_against_model(run, method, stop_once=info["stop_once"], sign=sign)
    # replaying the log up to the cut rebuilds the same state; the rest gives the same ops
    events = run.runner.events
    if run.snapshot is not None:
        restored = SearcherRunner.restore(make(), events[: run.cut], seed=5)
        assert restored.method.state_dict() == run.snapshot  # type: ignore[attr-defined]
        for (event, ops), record in zip(run.log[run.cut :], events[run.cut :], strict=True):
            assert send(restored, event) == ops, record
        # and the saved state, loaded into a fresh method, answers the next event the same
        loaded = make()
        loaded.load_state_dict(run.snapshot)
        assert loaded.state_dict() == run.snapshot
        if run.cut < len(run.log):
            event, ops = run.log[run.cut]
            assert to_trial_ops(send_to(loaded, event)) == ops_of(ops)


def send_to(method: HalvingSearch, event: Event) -> list[Any]:
    state = SearcherState()
    kind, args = event[0], list(event[1:])
    rid = uuid.UUID(int=args[0]) if args else None
    if kind == "created":
        return method.on_trial_created(state, rid)  # type: ignore[arg-type]
    if kind == "validated":
        return method.on_validation_completed(state, rid, args[1], args[2])  # type: ignore[arg-type]
    if kind == "exited":
        return method.on_trial_exited_early(state, rid, args[1])  # type: ignore[arg-type]
    if kind == "closed":
        return method.on_trial_closed(state, rid)  # type: ignore[arg-type]
    raise AssertionError(event)


def to_trial_ops(ops: list[Any]) -> list[tuple[Any, ...]]:
    out: list[tuple[Any, ...]] = []
    for op in ops:
        match op:
            case Create():
                out.append(("create", op.request_id.int))
            case ValidateAfter():
                out.append(("train", op.request_id.int, op.length))
            case Close():
                out.append(("close", op.request_id.int))
            case Shutdown():
                out.append(("shutdown", op.failure))
    return out


def test_the_same_seed_and_events_give_the_same_search() -> None:
    def run(seed: int) -> list[Any]:
        method = halving(max_length=27, num_rungs=3, max_trials=9, divisor=3, seed=seed)
        return drive(
            method, random.Random(1), metric=metric_table(1), exit_rate=0.1, kill_rate=0.0, cut=0
        ).log

    assert run(11) == run(11)
    assert run(11) != run(12)  # other draws
