"""Running a search method behind an append-only event log, and rebuilding it from that log."""

from __future__ import annotations

import math
import random
import uuid
from collections.abc import Callable, Iterable, Sequence
from dataclasses import dataclass, field
from typing import Any

from pedl.config import ExperimentConfig
from pedl.searcher._errors import SearcherError
from pedl.searcher._exited_reason import ExitedReason
from pedl.searcher._factory import make_search_method
from pedl.searcher._operations import (
    Close,
    Create,
    Operation,
    Shutdown,
    ValidateAfter,
    operation_to_dict,
)
from pedl.searcher._search_method import SearcherState, SearchMethod

EventSink = Callable[[dict[str, Any]], None]
"""Called with each event record before the searcher handles it (e.g. to write it to the DB)."""

INITIAL_OPERATIONS = "initial_operations"
TRIAL_CREATED = "trial_created"
VALIDATION_COMPLETED = "validation_completed"
TRIAL_EXITED_EARLY = "trial_exited_early"
TRIAL_CLOSED = "trial_closed"

_SEED_BOUND = 2**31 - 1


@dataclass(frozen=True)
class NewTrial:
    """Create trial ``request_id`` (the n-th ``Create``, counting from 1)."""

    request_id: int
    hparams: dict[str, Any] = field(hash=False)
    trial_seed: int
    checkpoint: str | None = None
    """Warm start: the uuid of the checkpoint whose weights the trial starts from."""
    parent_request_id: int | None = None
    """A copy (:class:`~pedl.searcher.TrialCheckpoint`): the trial it copies, whose
    checkpoint at ``parent_length`` it starts from."""
    parent_length: int | None = None


@dataclass(frozen=True)
class TrainTrial:
    """Train trial ``request_id`` to the absolute ``length`` and validate it."""

    request_id: int
    length: int


@dataclass(frozen=True)
class CloseTrial:
    """No more work for trial ``request_id``."""

    request_id: int


TrialOperation = NewTrial | TrainTrial | CloseTrial | Shutdown
"""A search method's operation as the engine sees it: trials named by integer request ids."""


def trial_seed_for(experiment_seed: int, request_id: int) -> int:
    """The seed of the ``request_id``-th trial of an experiment (a pure function of both)."""
    return random.Random(f"pedl-trial:{experiment_seed}:{request_id}").randint(0, _SEED_BOUND)


class SearcherRunner:
    """A :class:`SearchMethod` with an append-only log of the events it was given.

    The engine names trials by integer request ids (1, 2, ... in the order of the method's
    ``Create`` operations); the method by ``uuid.UUID``. The runner translates both ways and
    keeps the :class:`SearcherState` the method is handed, and derives each trial's seed
    from the experiment ``seed`` (:func:`trial_seed_for`).

    Each event becomes a JSON-able record ``{"seq": n, "kind": ..., <args>}`` (``seq`` counts
    from 0; request ids are the integers) that is appended to :attr:`events`, and passed to
    ``event_sink`` if one is given, BEFORE the method handles it; so a log that holds an
    event may hold it even if the process died while handling it, and replaying the log then
    redoes that handling. Events that do not fit the search's history (an unknown request
    id, a second ``initial_operations``, an event for a closed trial, a repeated creation or
    exit) raise :class:`SearcherError` and are not logged; so do operations that name a
    request id the method never created.

    The runner also tracks the *outstanding* operations: returned but not yet acknowledged
    (``NewTrial`` until the trial is created or exits, ``TrainTrial`` until a validation at
    that length or more, or the trial's exit or close, ``CloseTrial`` until the trial is
    closed; ``Shutdown`` stays). :meth:`restore` rebuilds a runner with the same method
    state and the same outstanding operations from the log alone.

    Not thread-safe: the caller serialises calls, as :class:`SearchMethod` requires.
    """

    def __init__(
        self,
        method: SearchMethod,
        *,
        seed: int = 0,
        max_length: int | None = None,
        event_sink: EventSink | None = None,
    ) -> None:
        self._method = method
        self._seed = seed
        self._max_length = max_length
        self._sink = event_sink
        self._state = SearcherState()
        self._events: list[dict[str, Any]] = []
        self._outstanding: list[TrialOperation] = []
        self._started = False
        self._ids: dict[uuid.UUID, int] = {}
        self._uuids: dict[int, uuid.UUID] = {}
        self._created: set[int] = set()
        self._exited: set[int] = set()
        self._closed: set[int] = set()

    @classmethod
    def replay(
        cls,
        config: ExperimentConfig,
        events: Iterable[dict[str, Any]],
        *,
        event_sink: EventSink | None = None,
    ) -> SearcherRunner:
        """Rebuild the runner of the experiment ``config`` from its event log.

        The method is made by :func:`make_search_method` and given every event in order;
        the sink, if given, is not called for them, only for later events.
        """
        return cls.restore(
            make_search_method(config),
            events,
            seed=config.reproducibility.experiment_seed,
            max_length=config.searcher_max_length,
            event_sink=event_sink,
        )

    @classmethod
    def restore(
        cls,
        method: SearchMethod,
        events: Iterable[dict[str, Any]],
        *,
        seed: int = 0,
        max_length: int | None = None,
        event_sink: EventSink | None = None,
    ) -> SearcherRunner:
        """Like :meth:`replay`, with a freshly constructed ``method`` (e.g. a custom one)."""
        runner = cls(method, seed=seed, max_length=max_length)
        for record in events:
            runner._handle(dict(record))
        runner._sink = event_sink
        return runner

    @property
    def method(self) -> SearchMethod:
        """The search method this runner drives."""
        return self._method

    @property
    def searcher_state(self) -> SearcherState:
        """The state handed to the method (do not modify it)."""
        return self._state

    @property
    def events(self) -> list[dict[str, Any]]:
        """A copy of the event log, oldest first."""
        return [dict(e) for e in self._events]

    @property
    def outstanding_operations(self) -> list[TrialOperation]:
        """The operations returned and not yet acknowledged by an event, in order."""
        return list(self._outstanding)

    @property
    def is_shut_down(self) -> bool:
        """Whether the method has returned ``Shutdown``."""
        return self._state.experiment_completed

    def request_uuid(self, request_id: int) -> uuid.UUID:
        """The method's name for the trial the engine calls ``request_id``."""
        return self._uuids[request_id]

    def progress(self) -> float:
        """The search's progress, 0.0 to 1.0."""
        return min(1.0, max(0.0, float(self._method.progress(self._state))))

    def initial_operations(self) -> list[TrialOperation]:
        """Log and handle the start of the search."""
        return self._handle({"kind": INITIAL_OPERATIONS})

    def on_trial_created(self, request_id: int) -> list[TrialOperation]:
        """Log and handle: the trial of ``NewTrial(request_id)`` exists."""
        return self._handle({"kind": TRIAL_CREATED, "request_id": request_id})

    def on_validation_completed(
        self,
        request_id: int,
        metric: float,
        length: int,
        objectives: Sequence[float | None] | None = None,
    ) -> list[TrialOperation]:
        """Log and handle: the trial validated at ``length`` with ``metric``. A
        multi-objective search also gives the ``objectives`` (one value per objective of
        ``searcher.metrics``, ``None`` or NaN for a missing one): the event records them
        (``null`` for a missing or non-finite one) and the method hears them
        (:meth:`SearchMethod.on_validation_objectives`, NaN for those)."""
        event: dict[str, Any] = {
            "kind": VALIDATION_COMPLETED,
            "request_id": request_id,
            "metric": float(metric),
            "length": int(length),
        }
        if objectives is not None:
            event["objectives"] = [_finite_or_none(v) for v in objectives]
        return self._handle(event)

    def on_trial_exited_early(self, request_id: int, reason: ExitedReason) -> list[TrialOperation]:
        """Log and handle: the trial stopped early for ``reason``."""
        return self._handle(
            {
                "kind": TRIAL_EXITED_EARLY,
                "request_id": request_id,
                "reason": ExitedReason(reason).value,
            }
        )

    def on_trial_closed(self, request_id: int) -> list[TrialOperation]:
        """Log and handle: the trial is closed."""
        return self._handle({"kind": TRIAL_CLOSED, "request_id": request_id})

    def _handle(self, event: dict[str, Any]) -> list[TrialOperation]:
        kind = event.get("kind")
        self._check(kind, event)
        record = {"seq": len(self._events), **{k: v for k, v in event.items() if k != "seq"}}
        self._events.append(record)
        if self._sink is not None:
            self._sink(dict(record))
        self._state.last_event_id = len(self._events)
        ops = [self._translate(op) for op in self._apply(record)]
        trial_ops = [op for op in ops if op is not None]
        self._outstanding.extend(trial_ops)
        return trial_ops

    def _translate(self, op: Operation) -> TrialOperation | None:
        operation_to_dict(op)  # refuse anything that is not an operation
        match op:
            case Create():
                if op.request_id in self._ids:
                    raise SearcherError(f"Create for request id {op.request_id} came twice.")
                parent = op.parent
                parent_id = None
                if parent is not None:
                    parent_id = self._ids.get(parent.request_id)
                    if parent_id is None:
                        raise SearcherError(f"{op!r} copies a request id that no Create made.")
                request_id = len(self._ids) + 1
                self._ids[op.request_id] = request_id
                self._uuids[request_id] = op.request_id
                return NewTrial(
                    request_id,
                    dict(op.hparams),
                    trial_seed_for(self._seed, request_id),
                    op.checkpoint_uuid,
                    parent_id,
                    None if parent is None else int(parent.length),
                )
            case ValidateAfter():
                return TrainTrial(self._id_of(op), int(op.length))
            case Close():
                return CloseTrial(self._id_of(op))
            case Shutdown():
                self._state.experiment_completed = True
                return op
        return None  # Progress: the method's progress() says the same

    def _id_of(self, op: ValidateAfter | Close) -> int:
        request_id = self._ids.get(op.request_id)
        if request_id is None:
            raise SearcherError(f"{op!r} names a request id that no Create made.")
        return request_id

    def _apply(self, record: dict[str, Any]) -> list[Operation]:
        kind = record["kind"]
        method, state = self._method, self._state
        if kind == INITIAL_OPERATIONS:
            self._started = True
            return method.initial_operations(state)
        request_id = int(record["request_id"])
        rid = self._uuids[request_id]
        if kind == TRIAL_CREATED:
            self._created.add(request_id)
            state.trials_created.add(rid)
            state.trial_progress.setdefault(rid, 0.0)
            self._acknowledge(lambda op: isinstance(op, NewTrial) and op.request_id == request_id)
            return method.on_trial_created(state, rid)
        if kind == VALIDATION_COMPLETED:
            length = int(record["length"])
            if self._max_length:
                state.trial_progress[rid] = min(1.0, length / self._max_length)
            self._acknowledge(
                lambda op: (
                    isinstance(op, TrainTrial)
                    and op.request_id == request_id
                    and op.length <= length
                )
            )
            objectives = record.get("objectives")
            if objectives is not None:
                values = tuple(math.nan if v is None else float(v) for v in objectives)
                return method.on_validation_objectives(state, rid, values, length)
            return method.on_validation_completed(state, rid, record["metric"], length)
        if kind == TRIAL_EXITED_EARLY:
            self._exited.add(request_id)
            reason = ExitedReason(record["reason"])
            if reason == ExitedReason.ERRORED:
                state.failures.add(rid)
            self._acknowledge(
                lambda op: isinstance(op, NewTrial | TrainTrial) and op.request_id == request_id
            )
            return method.on_trial_exited_early(state, rid, reason)
        # TRIAL_CLOSED
        self._closed.add(request_id)
        state.trials_closed.add(rid)
        self._acknowledge(
            lambda op: (
                isinstance(op, NewTrial | TrainTrial | CloseTrial) and op.request_id == request_id
            )
        )
        return method.on_trial_closed(state, rid)

    def _check(self, kind: Any, event: dict[str, Any]) -> None:
        if kind == INITIAL_OPERATIONS:
            if self._started:
                raise SearcherError("initial_operations was already handled.")
            return
        if kind not in (TRIAL_CREATED, VALIDATION_COMPLETED, TRIAL_EXITED_EARLY, TRIAL_CLOSED):
            raise SearcherError(f"Unknown searcher event kind {kind!r} in {event!r}.")
        if not self._started:
            raise SearcherError(f"Event {event!r} came before initial_operations.")
        request_id = event.get("request_id")
        if not isinstance(request_id, int) or request_id not in self._uuids:
            raise SearcherError(f"Event {event!r} names an unknown request id.")
        if request_id in self._closed:
            raise SearcherError(f"Event {event!r} is for a trial that is already closed.")
        if kind == TRIAL_CREATED and request_id in self._created:
            raise SearcherError(f"Trial {request_id} was already reported created.")
        if kind == TRIAL_EXITED_EARLY:
            if request_id in self._exited:
                raise SearcherError(f"Trial {request_id} already reported an early exit.")
            try:
                ExitedReason(str(event.get("reason")))
            except ValueError as e:
                raise SearcherError(f"Event {event!r} has an unknown exit reason.") from e
        if kind == VALIDATION_COMPLETED:
            if request_id in self._exited:
                raise SearcherError(f"Event {event!r} is for a trial that exited early.")
            if not isinstance(event.get("length"), int) or not isinstance(
                event.get("metric"), int | float
            ):
                raise SearcherError(f"Event {event!r} needs an int length and a float metric.")
            objectives = event.get("objectives")
            if objectives is not None and (
                not isinstance(objectives, list)
                or not objectives
                or not all(v is None or isinstance(v, int | float) for v in objectives)
            ):
                raise SearcherError(f"Event {event!r} needs objectives as a list of numbers.")

    def _acknowledge(self, matches: Callable[[TrialOperation], bool]) -> None:
        self._outstanding = [op for op in self._outstanding if not matches(op)]


def _finite_or_none(value: float | None) -> float | None:
    """An objective's value as an event records it: a finite float, else ``None``."""
    if value is None or isinstance(value, bool):
        return None
    try:
        number = float(value)
    except (TypeError, ValueError):
        return None
    return number if math.isfinite(number) else None
