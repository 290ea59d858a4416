"""The scheduler's placement rules (pure logic)."""

from __future__ import annotations

import random

from pedl.master.scheduler import (
    ExperimentLimits,
    RunningTrial,
    TrialRequest,
    never_fits,
    schedule,
)


def req(trial_id: int, experiment_id: int = 1, slots: int = 1) -> TrialRequest:
    return TrialRequest(trial_id, experiment_id, slots, order=trial_id)


def test_fills_free_slots_oldest_first() -> None:
    placement = schedule(2, [], [req(3), req(1), req(2)], {})
    assert placement.start == [1, 2]
    assert placement.waiting == {3: "waiting for slots: needs 1, 0 of 2 free"}


def test_a_halted_cluster_starts_nothing_and_says_why() -> None:
    placement = schedule(4, [], [req(2), req(1)], {}, halted="the master's disk is full")
    assert placement.start == []
    assert placement.waiting == {1: "the master's disk is full", 2: "the master's disk is full"}


def test_running_trials_hold_their_slots() -> None:
    placement = schedule(4, [RunningTrial(9, 1, 3)], [req(1, slots=2), req(2)], {})
    assert placement.start == [2]
    assert "needs 2, 1 of 4 free" in placement.waiting[1]


def test_a_trial_that_can_never_fit_says_so() -> None:
    placement = schedule(2, [], [req(1, slots=4)], {})
    assert placement.start == []
    assert placement.waiting[1] == "needs 4 slots, the cluster has 2"
    assert never_fits(4, 2) == "needs 4 slots, the cluster has 2"
    assert never_fits(2, 2) is None
    assert never_fits(2, 8, max_slots=1) is not None


def test_zero_slot_trials_always_start() -> None:
    placement = schedule(1, [RunningTrial(9, 1, 1)], [req(1, slots=0), req(2, slots=0)], {})
    assert placement.start == [1, 2]


def test_max_slots_and_max_concurrent_trials() -> None:
    limits = {1: ExperimentLimits(max_slots=2), 2: ExperimentLimits(max_concurrent_trials=1)}
    queued = [req(1, 1), req(2, 1), req(3, 1), req(4, 2), req(5, 2)]
    placement = schedule(10, [], queued, limits)
    assert placement.start == [1, 4, 2]
    assert "max_slots" in placement.waiting[3]
    assert "max_concurrent_trials is 1" in placement.waiting[5]


def test_priority_wins_then_fair_share_by_weight() -> None:
    limits = {
        1: ExperimentLimits(priority=50),
        2: ExperimentLimits(priority=10),
        3: ExperimentLimits(priority=50, weight=2.0),
    }
    queued = [req(1, 1), req(2, 1), req(3, 2), req(4, 3), req(5, 3), req(6, 3)]
    placement = schedule(4, [], queued, limits)
    # Experiment 2 first (priority 10); then 1 and 3 share by weight: 3 gets twice the slots.
    assert placement.start[0] == 3
    assert sorted(placement.start[1:]) == [1, 4, 5]
    assert set(placement.waiting) == {2, 6}


def test_smaller_trials_backfill_behind_a_big_one() -> None:
    placement = schedule(3, [RunningTrial(9, 1, 1)], [req(1, slots=3), req(2, slots=1)], {})
    assert placement.start == [2]
    assert 1 in placement.waiting


def test_result_does_not_depend_on_input_order() -> None:
    queued = [req(i, experiment_id=i % 3, slots=1 + i % 2) for i in range(1, 12)]
    limits = {0: ExperimentLimits(weight=3.0), 1: ExperimentLimits(max_slots=3)}
    expected = schedule(7, [RunningTrial(99, 2, 1)], queued, limits)
    rng = random.Random(0)
    for _ in range(5):
        shuffled = list(queued)
        rng.shuffle(shuffled)
        assert schedule(7, [RunningTrial(99, 2, 1)], shuffled, limits) == expected
    assert sum(1 + i % 2 for i in expected.start) <= 6
