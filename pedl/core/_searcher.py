"""The searcher's operations as the trial sees them: train to a length, report a metric."""

from __future__ import annotations

from collections.abc import Iterator
from typing import TYPE_CHECKING, Literal, Protocol

if TYPE_CHECKING:
    from pedl.core._distributed import DistributedContext

Unit = Literal["batches", "records", "epochs"]


class SearcherSession(Protocol):
    """The trial's line to the searcher (in-process in local mode, REST to the master).

    Contract: ``next_length`` returns the absolute length (in the experiment's unit) the trial
    must train to next, or None when the searcher has no more work for it; it is called only
    after the previous length was completed. ``complete`` is called once per length.
    """

    def next_length(self) -> int | None: ...

    def complete(self, length: int, searcher_metric: float) -> None: ...


class SearcherOperation:
    """Train to ``length`` (absolute, in ``unit``), validate, then ``report_completed``.

    On a worker other than the chief (``is_chief=False``), ``report_completed`` only marks the
    operation done: the chief's report is the one the searcher gets.
    """

    def __init__(
        self, session: SearcherSession, length: int, unit: Unit, *, is_chief: bool = True
    ) -> None:
        self._session = session
        self.length = length
        self.unit: Unit = unit
        self._completed = False
        self._is_chief = is_chief

    @property
    def completed(self) -> bool:
        return self._completed

    def report_progress(self, length: float) -> None:
        """Determined's progress report within the operation (``length`` trained so far):
        accepted and not needed, as PEDL counts a trial's progress from its metrics
        reports. ``RuntimeError`` after :meth:`report_completed`, as Determined's."""
        if self._completed and length != self.length:
            raise RuntimeError("op.report_progress() after op.report_completed()")

    def report_completed(self, searcher_metric: float) -> None:
        if self._completed:
            raise RuntimeError(f"operation to {self.length} {self.unit} was already completed")
        self._completed = True
        if self._is_chief:
            self._session.complete(self.length, float(searcher_metric))

    def __repr__(self) -> str:
        return f"SearcherOperation(length={self.length}, unit={self.unit!r})"


class SearcherContext:
    """Yields the trial's operations, one at a time, until the searcher closes the trial.

    With several workers (``distributed`` of size > 1) every worker iterates
    :meth:`operations` in step (Determined's ``WorkersAskChief``): the chief asks the
    searcher for each next length and broadcasts it, the others receive it; only the chief's
    ``report_completed`` reaches the searcher, and only the chief must call it.
    """

    def __init__(
        self,
        session: SearcherSession,
        unit: Unit,
        distributed: DistributedContext | None = None,
    ) -> None:
        self._session = session
        self.unit: Unit = unit
        self._dist = distributed if distributed is not None and distributed.size > 1 else None

    @property
    def session(self) -> SearcherSession:
        """The trial's line to the searcher (no collective: the chief's own use)."""
        return self._session

    def operations(self) -> Iterator[SearcherOperation]:
        is_chief = self._dist is None or self._dist.is_chief
        while True:
            length = self._next_length()
            if length is None:
                return
            op = SearcherOperation(self._session, length, self.unit, is_chief=is_chief)
            yield op
            if is_chief and not op.completed:
                raise RuntimeError(
                    "an operation must be completed (report_completed) before the next one"
                )

    def _next_length(self) -> int | None:
        """The searcher's next length: asked by the chief, broadcast to the other workers."""
        if self._dist is None:
            return self._session.next_length()
        if self._dist.is_chief:
            length = self._session.next_length()
            self._dist.broadcast(length)
            return length
        received: int | None = self._dist.broadcast(None)
        return received
