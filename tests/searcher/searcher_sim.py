"""A tiny pure stand-in for the master: drives a search method (through a
:class:`~pedl.searcher.SearcherRunner`, as the engine does) through simulated events."""

from __future__ import annotations

import random
import uuid
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any, Protocol

from pedl.searcher import (
    CloseTrial,
    ExitedReason,
    NewTrial,
    SearcherRunner,
    SearcherState,
    SearchMethod,
    Shutdown,
    TrainTrial,
    TrialOperation,
)

Operation = TrialOperation

Event = tuple[Any, ...]
"""("initial",) | ("created", rid) | ("validated", rid, metric, length)
| ("exited", rid, reason) | ("closed", rid)"""


class Handler(Protocol):
    def initial_operations(self) -> list[Operation]: ...
    def on_trial_created(self, request_id: int) -> list[Operation]: ...
    def on_validation_completed(
        self, request_id: int, metric: float, length: int
    ) -> list[Operation]: ...
    def on_trial_exited_early(self, request_id: int, reason: ExitedReason) -> list[Operation]: ...
    def on_trial_closed(self, request_id: int) -> list[Operation]: ...
    def progress(self) -> float: ...


def send(handler: Handler, event: Event) -> list[Operation]:
    """Deliver one event to a searcher (or runner) and return its operations."""
    kind = event[0]
    if kind == "initial":
        return handler.initial_operations()
    if kind == "created":
        return handler.on_trial_created(event[1])
    if kind == "validated":
        return handler.on_validation_completed(event[1], event[2], event[3])
    if kind == "exited":
        return handler.on_trial_exited_early(event[1], event[2])
    if kind == "closed":
        return handler.on_trial_closed(event[1])
    raise AssertionError(f"unknown event {event!r}")


def send_to_method(method: SearchMethod, event: Event) -> list[Any]:
    """Deliver one event straight to a search method, request id n as ``uuid.UUID(int=n)``
    (the built-in methods' ids), with an empty searcher state."""
    state = SearcherState()
    kind, args = event[0], list(event[1:])
    if args:
        args[0] = uuid.UUID(int=args[0])
    if kind == "initial":
        return method.initial_operations(state)
    if kind == "created":
        return method.on_trial_created(state, *args)
    if kind == "validated":
        return method.on_validation_completed(state, *args)
    if kind == "exited":
        return method.on_trial_exited_early(state, *args)
    if kind == "closed":
        return method.on_trial_closed(state, *args)
    raise AssertionError(f"unknown event {event!r}")


@dataclass
class Transcript:
    events: list[Event] = field(default_factory=list)
    ops: list[list[Operation]] = field(default_factory=list)
    progress: list[float] = field(default_factory=list)
    max_open: int = 0

    @property
    def creates(self) -> list[NewTrial]:
        return [op for ops in self.ops for op in ops if isinstance(op, NewTrial)]

    @property
    def all_ops(self) -> list[Operation]:
        return [op for ops in self.ops for op in ops]


def default_metric(hparams: dict[str, Any]) -> float:
    return float(len(repr(sorted(hparams.items()))))


def runner_of(handler: Handler | SearchMethod, seed: int = 0) -> Handler:
    """``handler`` itself, or a runner around the search method ``handler``."""
    if isinstance(handler, SearchMethod):
        return SearcherRunner(handler, seed=seed)
    return handler


def simulate(
    handler: Handler | SearchMethod,
    *,
    exits: dict[int, ExitedReason] | None = None,
    order_seed: int | None = None,
    metric: Callable[[dict[str, Any]], float] = default_metric,
    max_events: int = 10_000,
) -> Transcript:
    """Carry out the searcher's operations until it shuts down; record everything.

    Operations of one trial run in order; across trials they run first-come-first-served,
    or in an order shuffled by ``random.Random(order_seed)``. A trial in ``exits`` exits
    early (then is closed) when its ``ValidateAfter`` would run.
    """
    handler = runner_of(handler)
    exits = exits or {}
    pick = random.Random(order_seed) if order_seed is not None else None
    transcript = Transcript()
    hparams: dict[int, dict[str, Any]] = {}
    open_trials: set[int] = set()
    pending: list[Operation] = []

    def deliver(event: Event) -> None:
        ops = send(handler, event)
        transcript.events.append(event)
        transcript.ops.append(ops)
        transcript.progress.append(handler.progress())
        pending.extend(ops)

    deliver(("initial",))
    while any(not isinstance(op, Shutdown) for op in pending):
        assert len(transcript.events) < max_events, "the searcher never shut down"
        heads = []
        seen: set[int] = set()
        for i, op in enumerate(pending):
            if isinstance(op, Shutdown):
                continue
            if op.request_id not in seen:
                heads.append(i)
                seen.add(op.request_id)
        index = heads[0] if pick is None else pick.choice(heads)
        op = pending.pop(index)
        if isinstance(op, NewTrial):
            hparams[op.request_id] = op.hparams
            open_trials.add(op.request_id)
            transcript.max_open = max(transcript.max_open, len(open_trials))
            deliver(("created", op.request_id))
        elif isinstance(op, TrainTrial):
            if op.request_id in exits:
                pending[:] = [
                    p for p in pending if isinstance(p, Shutdown) or p.request_id != op.request_id
                ]
                open_trials.discard(op.request_id)
                deliver(("exited", op.request_id, exits[op.request_id]))
                deliver(("closed", op.request_id))
            else:
                deliver(("validated", op.request_id, metric(hparams[op.request_id]), op.length))
        elif isinstance(op, CloseTrial):
            open_trials.discard(op.request_id)
            deliver(("closed", op.request_id))
    assert open_trials == set()
    return transcript
