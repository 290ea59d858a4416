"""The master's own log lines, kept in memory for ``det master logs`` (``GET /master/logs``).

A :class:`MasterLog` is a :class:`logging.Handler` holding the process's latest log records in
a bounded ring buffer: at most ``capacity`` lines (the oldest go first), each message cut to
``max_message`` characters. Lines are numbered from 1 in the order they were logged, so a
reader that follows them asks for those after the last number it saw.
"""

from __future__ import annotations

import logging
import threading
from collections import deque
from dataclasses import dataclass
from datetime import UTC, datetime

DEFAULT_CAPACITY = 10_000
"""Lines a master keeps by default."""
MAX_MESSAGE = 8_192
"""Characters kept of one message (with its traceback); the rest is cut, saying so."""


@dataclass(frozen=True)
class MasterLogLine:
    """One record of the master's log."""

    seq: int
    timestamp: datetime
    level: str
    logger: str
    message: str


class MasterLog(logging.Handler):
    """A ring buffer of the latest ``capacity`` log records (see the module docstring);
    thread-safe. :meth:`attach` adds it to the root logger (once), :meth:`detach` removes it."""

    def __init__(self, capacity: int = DEFAULT_CAPACITY, max_message: int = MAX_MESSAGE) -> None:
        if capacity < 1 or max_message < 1:
            raise ValueError("capacity and max_message must be at least 1")
        super().__init__(level=logging.NOTSET)
        self._lines: deque[MasterLogLine] = deque(maxlen=capacity)
        self._max_message = max_message
        self._seq = 0
        self._guard = threading.Lock()

    @property
    def capacity(self) -> int:
        maxlen = self._lines.maxlen
        assert maxlen is not None
        return maxlen

    def attach(self) -> None:
        root = logging.getLogger()
        if self not in root.handlers:
            root.addHandler(self)

    def detach(self) -> None:
        logging.getLogger().removeHandler(self)

    def emit(self, record: logging.LogRecord) -> None:
        try:
            message = record.getMessage()
            if record.exc_info:
                message = f"{message}\n{logging.Formatter().formatException(record.exc_info)}"
        except Exception:  # a bad format string must not break the caller's logging
            message = str(record.msg)
        if len(message) > self._max_message:
            cut = len(message) - self._max_message
            message = f"{message[: self._max_message]} [... {cut} more characters]"
        moment = datetime.fromtimestamp(record.created, tz=UTC)
        with self._guard:
            self._seq += 1
            self._lines.append(
                MasterLogLine(self._seq, moment, record.levelname, record.name, message)
            )

    def lines(
        self, *, after_seq: int | None = None, tail: int | None = None
    ) -> list[MasterLogLine]:
        """The kept lines after ``after_seq`` (all when None), oldest first; with ``tail``,
        only the last ``tail`` of them."""
        with self._guard:
            kept = list(self._lines)
        if after_seq is not None:
            kept = [line for line in kept if line.seq > after_seq]
        if tail is not None:
            kept = kept[len(kept) - tail :] if tail > 0 else []
        return kept
