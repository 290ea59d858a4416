"""SearcherRunner: the event log, outstanding operations, replay and state round trips."""

from __future__ import annotations

import json
import uuid
from typing import Any

import pytest
from searcher_sim import Event, send, send_to_method, simulate

from pedl.config import ExperimentConfig
from pedl.searcher import (
    Close,
    CloseTrial,
    Create,
    ExitedReason,
    JSONStateSearchMethod,
    NewTrial,
    Operation,
    Progress,
    SearcherError,
    SearcherRunner,
    SearcherState,
    SearchMethod,
    Shutdown,
    TrainTrial,
    TrialOperation,
    ValidateAfter,
    make_search_method,
    operation_from_dict,
    operation_to_dict,
    trial_seed_for,
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


def method_state(runner: SearcherRunner) -> dict[str, Any]:
    method = runner.method
    assert isinstance(method, JSONStateSearchMethod)
    return method.state_dict()


def json_method(cfg: Any) -> JSONStateSearchMethod:
    method = make_search_method(cfg)
    assert isinstance(method, JSONStateSearchMethod)
    return method


def run_recorded(searcher: dict[str, Any]) -> tuple[SearcherRunner, list[dict[str, Any]], Any]:
    """Drive a runner to the end; return it, the states after each event, and the transcript."""
    cfg = config(searcher)
    runner = SearcherRunner(make_search_method(cfg), seed=42)
    states: list[dict[str, Any]] = []

    class Recording:
        def __getattr__(self, name: str) -> Any:
            method = getattr(runner, name)
            if not name.startswith("on_") and name != "initial_operations":
                return method

            def call(*args: Any) -> list[TrialOperation]:
                ops = method(*args)
                states.append(
                    {
                        "method": method_state(runner),
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
            assert method_state(replayed) == states[k - 1]["method"]
            assert replayed.outstanding_operations == states[k - 1]["outstanding"]
        # The future: the same later events produce the same operations.
        future = [send(replayed, event) for event in transcript.events[k:]]
        assert future == transcript.ops[k:]
        assert replayed.events == events
        assert method_state(replayed) == method_state(runner)
        assert replayed.is_shut_down


@pytest.mark.parametrize("searcher", SEARCHERS)
def test_state_dict_round_trip_at_every_prefix(searcher: dict[str, Any]) -> None:
    _, _, transcript = run_recorded(searcher)
    events: list[Event] = transcript.events
    complete = json_method(config(searcher))
    complete_ops = [send_to_method(complete, event) for event in events]
    for k in range(len(events) + 1):
        original = json_method(config(searcher))
        for event in events[:k]:
            send_to_method(original, event)
        state = json.loads(json.dumps(original.state_dict()))
        restored = json_method(config(searcher))
        restored.load_state_dict(state)
        assert restored.state_dict() == original.state_dict()
        assert restored.progress(SearcherState()) == original.progress(SearcherState())
        assert [send_to_method(restored, e) for e in events[k:]] == complete_ops[k:]
        assert restored.state_dict() == complete.state_dict()


def test_events_reach_the_sink_before_the_searcher_handles_them() -> None:
    cfg = config({"name": "random", "max_trials": 2, "max_concurrent_trials": 1})
    seen: list[tuple[dict[str, Any], dict[str, Any]]] = []

    def sink(record: dict[str, Any]) -> None:
        seen.append((record, method_state(runner)))

    runner = SearcherRunner(make_search_method(cfg), event_sink=sink)
    before = method_state(runner)
    runner.initial_operations()
    after_initial = method_state(runner)
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
    assert isinstance(create, NewTrial) and validate == TrainTrial(1, 3)
    assert runner.outstanding_operations == [create, validate]
    runner.on_trial_created(1)
    assert runner.outstanding_operations == [validate]
    runner.on_validation_completed(1, 0.1, 2)  # a shorter validation acknowledges nothing
    assert runner.outstanding_operations == [validate]
    assert runner.on_validation_completed(1, 0.1, 3) == [CloseTrial(1)]
    assert runner.outstanding_operations == [CloseTrial(1)]
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


RID = uuid.UUID("3f1c1d2e-0000-4000-8000-000000000003")


@pytest.mark.parametrize(
    "op",
    [
        Create(RID, {"lr": 0.1, "nested": {"a": [1, 2]}}),
        Create(RID, {}, "0b8c5ad2-5bd4-4f3c-9a0e-7c1d2e3f4a5b"),
        ValidateAfter(RID, 700),
        Close(RID),
        Progress(0.25),
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


class FromUUID4(SearchMethod):
    """A Determined-style custom method: random uuid4 request ids, one trial per event."""

    def __init__(self) -> None:
        self.created: list[uuid.UUID] = []

    def initial_operations(self, searcher_state: SearcherState) -> list[Operation]:
        rid = uuid.uuid4()
        self.created.append(rid)
        return [Create(rid, {"i": 0}, None), ValidateAfter(rid, 4)]

    def on_trial_created(
        self, searcher_state: SearcherState, request_id: uuid.UUID
    ) -> list[Operation]:
        assert request_id in searcher_state.trials_created
        return []

    def on_validation_completed(
        self,
        searcher_state: SearcherState,
        request_id: uuid.UUID,
        metric: float,
        train_length: int,
    ) -> list[Operation]:
        assert searcher_state.trial_progress[request_id] == train_length / 8
        return [ValidateAfter(request_id, 8)] if train_length < 8 else [Close(request_id)]

    def on_trial_closed(
        self, searcher_state: SearcherState, request_id: uuid.UUID
    ) -> list[Operation]:
        assert request_id in searcher_state.trials_closed
        if len(self.created) < 2:
            rid = uuid.uuid4()
            self.created.append(rid)
            return [Create(rid, {"i": 1}, None), ValidateAfter(rid, 8)]
        return [Progress(1.0), Shutdown()]

    def on_trial_exited_early(
        self, searcher_state: SearcherState, request_id: uuid.UUID, exited_reason: ExitedReason
    ) -> list[Operation]:
        return []

    def progress(self, searcher_state: SearcherState) -> float:
        return len(searcher_state.trials_closed) / 2


def test_a_determined_style_method_gets_integer_trials_and_a_searcher_state() -> None:
    runner = SearcherRunner(FromUUID4(), seed=9, max_length=8)
    transcript = simulate(runner)
    assert [c.request_id for c in transcript.creates] == [1, 2]
    assert [c.trial_seed for c in transcript.creates] == [
        trial_seed_for(9, 1),
        trial_seed_for(9, 2),
    ]
    assert [op for op in transcript.all_ops if isinstance(op, TrainTrial)] == [
        TrainTrial(1, 4),
        TrainTrial(1, 8),
        TrainTrial(2, 8),
    ]
    assert transcript.all_ops[-1] == Shutdown()
    assert runner.searcher_state.experiment_completed and runner.progress() == 1.0
    assert runner.searcher_state.last_event_id == len(runner.events)
    # Replayed into a fresh method with new uuid4s: same trials, same operations.
    replayed = SearcherRunner.restore(FromUUID4(), runner.events, seed=9, max_length=8)
    assert replayed.outstanding_operations == runner.outstanding_operations
    assert replayed.request_uuid(2) != runner.request_uuid(2)


def test_operations_for_unknown_request_ids_are_refused() -> None:
    class Stray(FromUUID4):
        def on_trial_created(
            self, searcher_state: SearcherState, request_id: uuid.UUID
        ) -> list[Operation]:
            return [Close(uuid.uuid4())]

    runner = SearcherRunner(Stray())
    runner.initial_operations()
    with pytest.raises(SearcherError, match="no Create made"):
        runner.on_trial_created(1)


def test_searcher_state_and_method_state_save_and_load(tmp_path: Any) -> None:
    cfg = config({"name": "random", "max_trials": 3, "max_concurrent_trials": 1})
    runner = SearcherRunner(make_search_method(cfg), seed=42, max_length=3)
    runner.initial_operations()
    runner.on_trial_created(1)
    runner.on_validation_completed(1, 0.5, 3)
    runner.method.save(runner.searcher_state, tmp_path, experiment_id=12)
    fresh = make_search_method(cfg)
    state, experiment_id = fresh.load(tmp_path)
    assert experiment_id == 12
    assert state == runner.searcher_state
    assert state.trial_progress == {runner.request_uuid(1): 1.0}
    assert method_state(SearcherRunner(fresh)) == method_state(runner)
