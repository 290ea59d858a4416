"""The searcher's operations as the trial sees them: train to a length, report a metric."""

from __future__ import annotations

from collections.abc import Iterator
from typing import Literal, Protocol

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
    """Train to ``length`` (absolute, in ``unit``), validate, then ``report_completed``."""

    def __init__(self, session: SearcherSession, length: int, unit: Unit) -> None:
        self._session = session
        self.length = length
        self.unit: Unit = unit
        self._completed = False

    @property
    def completed(self) -> bool:
        return self._completed

    def report_completed(self, searcher_metric: float) -> None:
        if self._completed:
            raise RuntimeError(f"operation to {self.length} {self.unit} was already completed")
        self._completed = True
        self._session.complete(self.length, float(searcher_metric))

    def __repr__(self) -> str:
        return f"SearcherOperation(length={self.length}, unit={self.unit!r})"


class SearcherContext:
    """Yields the trial's operations, one at a time, until the searcher closes the trial."""

    def __init__(self, session: SearcherSession, unit: Unit) -> None:
        self._session = session
        self.unit: Unit = unit

    def operations(self) -> Iterator[SearcherOperation]:
        while True:
            length = self._session.next_length()
            if length is None:
                return
            op = SearcherOperation(self._session, length, self.unit)
            yield op
            if not op.completed:
                raise RuntimeError(
                    "an operation must be completed (report_completed) before the next one"
                )
