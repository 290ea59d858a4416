"""SearcherRunner: the event log, outstanding operations, replay and state round trips."""

from __future__ import annotations

import json
from typing import Any

import pytest
from searcher_sim import Event, send, simulate

from pedl.config import ExperimentConfig
from pedl.searcher import (
    Close,
    Create,
    ExitedReason,
    Operation,
    SearcherError,
    SearcherRunner,
    Shutdown,
    ValidateAfter,
    make_search_method,
    operation_from_dict,
    operation_to_dict,
)

SEARCHERS = [
    {"name": "single"},
    {"name": "grid", "max_concurrent_trials": 2},
    {"name": "random", "max_trials": 5, "max_concurrent_trials": 2},
    {"name": "random", "max_trials": 4, "max_concurrent_trials": 0},
]


def config(searcher: dict[str, Any]) -> Any:
    return ExperimentConfig.model_validate(
        {
            "searcher": {"metric": "loss", "max_length": {"epochs": 3}, **searcher},
            "records_per_epoch": 64,
            "hyperparameters": {
                "lr": {"type": "log", "base": 10, "minval": -4, "maxval": -1, "count": 2},
                "dropout": {"type": "double", "minval": 0.0, "maxval": 0.5, "count": 2},
                "width": 32,
            },
            "reproducibility": {"experiment_seed": 42},
        }
    )


def run_recorded(searcher: dict[str, Any]) -> tuple[SearcherRunner, list[dict[str, Any]], Any]:
    """Drive a runner to the end; return it, the states after each event, and the transcript."""
    cfg = config(searcher)
    runner = SearcherRunner(make_search_method(cfg))
    states: list[dict[str, Any]] = []

    class Recording:
        def __getattr__(self, name: str) -> Any:
            method = getattr(runner, name)
            if not name.startswith("on_") and name != "initial_operations":
                return method

            def call(*args: Any) -> list[Operation]:
                ops = method(*args)
                states.append(
                    {
                        "method": runner.method.state_dict(),
                        "outstanding": runner.outstanding_operations,
                    }
                )
                return ops

            return call

    transcript = simulate(
        Recording(),
        exits={2: ExitedReason.ERRORED},
        order_seed=5,
    )
    return runner, states, transcript


@pytest.mark.parametrize("searcher", SEARCHERS)
def test_replay_at_every_prefix_yields_identical_futures(searcher: dict[str, Any]) -> None:
    runner, states, transcript = run_recorded(searcher)
    events = runner.events
    assert len(events) == len(transcript.events) == len(states)
    assert json.loads(json.dumps(events)) == events
    assert [e["seq"] for e in events] == list(range(len(events)))
    for k in range(len(events) + 1):
        replayed = SearcherRunner.replay(config(searcher), json.loads(json.dumps(events[:k])))
        assert replayed.events == events[:k]
        if k > 0:
            assert replayed.method.state_dict() == states[k - 1]["method"]
            assert replayed.outstanding_operations == states[k - 1]["outstanding"]
        # The future: the same later events produce the same operations.
        future = [send(replayed, event) for event in transcript.events[k:]]
        assert future == transcript.ops[k:]
        assert replayed.events == events
        assert replayed.method.state_dict() == runner.method.state_dict()
        assert replayed.is_shut_down


@pytest.mark.parametrize("searcher", SEARCHERS)
def test_state_dict_round_trip_at_every_prefix(searcher: dict[str, Any]) -> None:
    _, _, transcript = run_recorded(searcher)
    events: list[Event] = transcript.events
    complete = make_search_method(config(searcher))
    for event in events:
        send(complete, event)
    for k in range(len(events) + 1):
        original = make_search_method(config(searcher))
        for event in events[:k]:
            send(original, event)
        state = json.loads(json.dumps(original.state_dict()))
        restored = make_search_method(config(searcher))
        restored.load_state_dict(state)
        assert restored.state_dict() == original.state_dict()
        assert restored.progress() == original.progress()
        assert [send(restored, e) for e in events[k:]] == transcript.ops[k:]
        assert restored.state_dict() == complete.state_dict()


def test_events_reach_the_sink_before_the_searcher_handles_them() -> None:
    cfg = config({"name": "random", "max_trials": 2, "max_concurrent_trials": 1})
    seen: list[tuple[dict[str, Any], dict[str, Any]]] = []

    def sink(record: dict[str, Any]) -> None:
        seen.append((record, runner.method.state_dict()))

    runner = SearcherRunner(make_search_method(cfg), event_sink=sink)
    before = runner.method.state_dict()
    runner.initial_operations()
    after_initial = runner.method.state_dict()
    runner.on_trial_created(1)
    assert seen[0] == ({"seq": 0, "kind": "initial_operations"}, before)
    assert seen[1] == ({"seq": 1, "kind": "trial_created", "request_id": 1}, after_initial)
    assert before != after_initial
    # Replay does not feed the sink again; later events do.
    fed: list[dict[str, Any]] = []
    replayed = SearcherRunner.replay(cfg, runner.events, event_sink=fed.append)
    assert fed == []
    replayed.on_validation_completed(1, 0.25, 3)
    assert fed == [
        {"seq": 2, "kind": "validation_completed", "request_id": 1, "metric": 0.25, "length": 3}
    ]


def test_outstanding_operations_follow_acknowledgements() -> None:
    runner = SearcherRunner(make_search_method(config({"name": "single"})))
    (create, validate) = runner.initial_operations()
    assert isinstance(create, Create) and validate == ValidateAfter(1, 3)
    assert runner.outstanding_operations == [create, validate]
    runner.on_trial_created(1)
    assert runner.outstanding_operations == [validate]
    runner.on_validation_completed(1, 0.1, 2)  # a shorter validation acknowledges nothing
    assert runner.outstanding_operations == [validate]
    assert runner.on_validation_completed(1, 0.1, 3) == [Close(1)]
    assert runner.outstanding_operations == [Close(1)]
    assert not runner.is_shut_down
    assert runner.on_trial_closed(1) == [Shutdown()]
    assert runner.outstanding_operations == [Shutdown()]
    assert runner.is_shut_down
    assert runner.progress() == 1.0


def test_out_of_order_events_are_refused_and_not_logged() -> None:
    runner = SearcherRunner(make_search_method(config({"name": "single"})))
    with pytest.raises(SearcherError, match="before initial_operations"):
        runner.on_trial_created(1)
    runner.initial_operations()
    with pytest.raises(SearcherError, match="already handled"):
        runner.initial_operations()
    with pytest.raises(SearcherError, match="unknown request id"):
        runner.on_trial_created(7)
    runner.on_trial_created(1)
    with pytest.raises(SearcherError, match="already reported created"):
        runner.on_trial_created(1)
    assert runner.on_trial_exited_early(1, ExitedReason.USER_CANCELED) == []
    with pytest.raises(SearcherError, match="already reported an early exit"):
        runner.on_trial_exited_early(1, ExitedReason.ERRORED)
    with pytest.raises(SearcherError, match="exited early"):
        runner.on_validation_completed(1, 0.5, 3)
    assert runner.on_trial_closed(1) == [Shutdown(failure=False)]
    with pytest.raises(SearcherError, match="already closed"):
        runner.on_trial_closed(1)
    assert [e["kind"] for e in runner.events] == [
        "initial_operations",
        "trial_created",
        "trial_exited_early",
        "trial_closed",
    ]
    assert runner.events[2]["reason"] == "USER_CANCELED"


def test_malformed_log_refused_on_replay() -> None:
    cfg = config({"name": "single"})
    with pytest.raises(SearcherError, match="Unknown searcher event kind"):
        SearcherRunner.replay(cfg, [{"seq": 0, "kind": "initial_operations"}, {"kind": "boom"}])
    with pytest.raises(SearcherError, match="unknown exit reason"):
        SearcherRunner.replay(
            cfg,
            [
                {"kind": "initial_operations"},
                {"kind": "trial_exited_early", "request_id": 1, "reason": "BORED"},
            ],
        )


@pytest.mark.parametrize(
    "op",
    [
        Create(3, {"lr": 0.1, "nested": {"a": [1, 2]}}, 12345),
        ValidateAfter(3, 700),
        Close(3),
        Shutdown(failure=True),
        Shutdown(cancel=True),
    ],
)
def test_operation_records_round_trip(op: Operation) -> None:
    record = operation_to_dict(op)
    assert json.loads(json.dumps(record)) == record
    assert operation_from_dict(json.loads(json.dumps(record))) == op


def test_bad_operation_record_refused() -> None:
    with pytest.raises(SearcherError, match="Unknown operation type"):
        operation_from_dict({"type": "explode"})
    with pytest.raises(SearcherError, match="Malformed"):
        operation_from_dict({"type": "close"})
