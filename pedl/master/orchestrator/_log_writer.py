"""Writing lines into a trial's logs with sequence numbers that continue across restarts."""

from __future__ import annotations

import threading
from collections.abc import Sequence
from datetime import UTC, datetime

from pedl.db import Database, LogLine
from pedl.db import logs as logs_repo
from pedl.master.orchestrator._log_levels import level_of


class TrialLogWriter:
    """Appends ``(stream, message)`` lines to trial logs (the resource manager's log sink).

    Each trial's lines get consecutive ``seq`` numbers, starting after the largest one stored,
    so the output of a restarted process (or of a restarted master) follows the earlier
    output. Thread-safe: calls are serialised.
    """

    def __init__(self, database: Database) -> None:
        self._db = database
        self._lock = threading.Lock()
        self._next: dict[int, int] = {}

    def write(
        self, trial_id: int, lines: Sequence[tuple[str, str] | tuple[str, str, int | None]]
    ) -> None:
        """Append ``(stream, message)`` or ``(stream, message, rank)`` lines (``rank``: the
        worker of a multi-worker trial that wrote it; None or absent: none), each with the
        level its text names (:func:`level_of`)."""
        if not lines:
            return
        with self._lock, self._db.session(write=True) as session:
            start = self._next.get(trial_id)
            if start is None:
                last = logs_repo.last_log_seq(session, trial_id)
                start = 0 if last is None else last + 1
            now = datetime.now(UTC)
            rows = [
                LogLine(
                    seq=start + i,
                    message=line[1],
                    level=level_of(line[1]),
                    stream=line[0],
                    timestamp=now,
                    rank=line[2] if len(line) > 2 else None,
                )
                for i, line in enumerate(lines)
            ]
            logs_repo.append_logs(session, trial_id, rows)
            self._next[trial_id] = start + len(rows)

    def forget(self, trial_id: int) -> None:
        """Drop the cached counter of a trial (its next write reads the stored maximum)."""
        with self._lock:
            self._next.pop(trial_id, None)
