"""Running a searcher behind an append-only event log, and rebuilding it from that log."""

from __future__ import annotations

from collections.abc import Callable, Iterable
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
from pedl.searcher._search_method import SearchMethod

EventSink = Callable[[dict[str, Any]], None]
"""Called with each event record before the searcher handles it (e.g. to write it to the DB)."""

INITIAL_OPERATIONS = "initial_operations"
TRIAL_CREATED = "trial_created"
VALIDATION_COMPLETED = "validation_completed"
TRIAL_EXITED_EARLY = "trial_exited_early"
TRIAL_CLOSED = "trial_closed"


class SearcherRunner:
    """A :class:`SearchMethod` with an append-only log of the events it was given.

    Each event becomes a JSON-able record ``{"seq": n, "kind": ..., <args>}`` (``seq`` counts
    from 0) that is appended to :attr:`events`, and passed to ``event_sink`` if one is given,
    BEFORE the searcher handles it; so a log that holds an event may hold it even if the
    process died while handling it, and replaying the log then redoes that handling. Events
    that do not fit the searcher's history (an unknown request id, a second
    ``initial_operations``, an event for a closed trial, a repeated creation or exit) raise
    :class:`SearcherError` and are not logged.

    The runner also tracks the *outstanding* operations: returned but not yet acknowledged
    (``Create`` until the trial is created or exits, ``ValidateAfter`` until a validation at
    that length or more, or the trial's exit or close, ``Close`` until the trial is closed;
    ``Shutdown`` stays). :meth:`replay` rebuilds a runner with the same searcher state and
    the same outstanding operations from the log alone.

    Not thread-safe: the caller serialises calls, as :class:`SearchMethod` requires.
    """

    def __init__(self, method: SearchMethod, *, event_sink: EventSink | None = None) -> None:
        self._method = method
        self._sink = event_sink
        self._events: list[dict[str, Any]] = []
        self._outstanding: list[Operation] = []
        self._started = False
        self._known: set[int] = set()
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

        The searcher is made by :func:`make_search_method` and given every event in order;
        the sink, if given, is not called for them, only for later events.
        """
        return cls.restore(make_search_method(config), events, event_sink=event_sink)

    @classmethod
    def restore(
        cls,
        method: SearchMethod,
        events: Iterable[dict[str, Any]],
        *,
        event_sink: EventSink | None = None,
    ) -> SearcherRunner:
        """Like :meth:`replay`, with a freshly constructed ``method`` (e.g. a custom one)."""
        runner = cls(method)
        for record in events:
            runner._handle(dict(record))
        runner._sink = event_sink
        return runner

    @property
    def method(self) -> SearchMethod:
        """The searcher this runner drives."""
        return self._method

    @property
    def events(self) -> list[dict[str, Any]]:
        """A copy of the event log, oldest first."""
        return [dict(e) for e in self._events]

    @property
    def outstanding_operations(self) -> list[Operation]:
        """The operations returned and not yet acknowledged by an event, in order."""
        return list(self._outstanding)

    @property
    def is_shut_down(self) -> bool:
        """Whether the searcher has returned ``Shutdown``."""
        return any(isinstance(op, Shutdown) for op in self._outstanding)

    def progress(self) -> float:
        """The searcher's progress, 0.0 to 1.0."""
        return self._method.progress()

    def initial_operations(self) -> list[Operation]:
        """Log and handle the start of the search."""
        return self._handle({"kind": INITIAL_OPERATIONS})

    def on_trial_created(self, request_id: int) -> list[Operation]:
        """Log and handle: the trial of ``Create(request_id)`` exists."""
        return self._handle({"kind": TRIAL_CREATED, "request_id": request_id})

    def on_validation_completed(
        self, request_id: int, metric: float, length: int
    ) -> list[Operation]:
        """Log and handle: the trial validated at ``length`` with ``metric``."""
        return self._handle(
            {
                "kind": VALIDATION_COMPLETED,
                "request_id": request_id,
                "metric": float(metric),
                "length": int(length),
            }
        )

    def on_trial_exited_early(self, request_id: int, reason: ExitedReason) -> list[Operation]:
        """Log and handle: the trial stopped early for ``reason``."""
        return self._handle(
            {
                "kind": TRIAL_EXITED_EARLY,
                "request_id": request_id,
                "reason": ExitedReason(reason).value,
            }
        )

    def on_trial_closed(self, request_id: int) -> list[Operation]:
        """Log and handle: the trial is closed."""
        return self._handle({"kind": TRIAL_CLOSED, "request_id": request_id})

    def _handle(self, event: dict[str, Any]) -> list[Operation]:
        kind = event.get("kind")
        self._check(kind, event)
        record = {"seq": len(self._events), **{k: v for k, v in event.items() if k != "seq"}}
        self._events.append(record)
        if self._sink is not None:
            self._sink(dict(record))
        ops = self._apply(record)
        for op in ops:
            operation_to_dict(op)  # refuse anything that is not an operation
            if isinstance(op, Create):
                self._known.add(op.request_id)
        self._outstanding.extend(ops)
        return list(ops)

    def _apply(self, record: dict[str, Any]) -> list[Operation]:
        kind = record["kind"]
        if kind == INITIAL_OPERATIONS:
            self._started = True
            return self._method.initial_operations()
        request_id = int(record["request_id"])
        ops: list[Operation]
        if kind == TRIAL_CREATED:
            self._created.add(request_id)
            self._acknowledge(lambda op: isinstance(op, Create) and op.request_id == request_id)
            ops = self._method.on_trial_created(request_id)
        elif kind == VALIDATION_COMPLETED:
            length = int(record["length"])
            self._acknowledge(
                lambda op: (
                    isinstance(op, ValidateAfter)
                    and op.request_id == request_id
                    and op.length <= length
                )
            )
            ops = self._method.on_validation_completed(request_id, record["metric"], length)
        elif kind == TRIAL_EXITED_EARLY:
            self._exited.add(request_id)
            self._acknowledge(
                lambda op: isinstance(op, Create | ValidateAfter) and op.request_id == request_id
            )
            ops = self._method.on_trial_exited_early(request_id, ExitedReason(record["reason"]))
        else:  # TRIAL_CLOSED
            self._closed.add(request_id)
            self._acknowledge(
                lambda op: (
                    isinstance(op, Create | ValidateAfter | Close) and op.request_id == request_id
                )
            )
            ops = self._method.on_trial_closed(request_id)
        return ops

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
        if not isinstance(request_id, int) or request_id not in self._known:
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

    def _acknowledge(self, matches: Callable[[Operation], bool]) -> None:
        self._outstanding = [op for op in self._outstanding if not matches(op)]
