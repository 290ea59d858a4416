"""The trial's reports to the master, sent in order by one background thread.

Why: a trial that posted each metric report itself stopped training whenever the master
could not be reached (a network outage, a master restarting), for as long as the outage
lasted. Reports need no answer, so the trainer queues them and goes on; only what the trainer
must wait for (its next searcher operation, its exit report) waits for the queue to empty.
"""

from __future__ import annotations

import collections
import threading
import time
from typing import Any

from pedl.exec._master_client import MasterClient, MasterError

DEFAULT_CAPACITY = 1000
"""Reports that may wait at once (a few KB each); one more blocks the trainer."""
CLOSE_WAIT_S = 5.0
"""How long :meth:`ReportSender.close` waits for a report being sent (e.g. retried)."""
SETTLE_POLL_S = 0.05
"""How often :meth:`ReportSender.settle` looks whether the master became unreachable."""


class ReportSender:
    """Sends a trial's reports (``POST`` bodies) to the master in the order they were queued,
    from one background thread, through ``client`` (which retries for its patience).

    Contract:

    - :meth:`send` queues a report and returns at once; when ``capacity`` reports wait
      already, it blocks until one is sent (a report is never dropped).
    - One report at a time, in order: a report reaches the master only after every report
      queued before it (a checkpoint is registered only after the metrics that precede it).
    - :meth:`flush` returns once every queued report was sent.
    - :meth:`settle` waits like :meth:`flush` while the master answers, and returns early once
      it cannot be reached (or after a time limit): what a crash must not lose is sent when
      it can be, without stopping training during an outage.
    - The first failure (a 4xx answer, or the master unreachable for the client's patience)
      stops the sending; it is raised, as the :class:`MasterError` it was, by every later
      :meth:`send` and :meth:`flush`, so the trainer sees it at its next call.
    - :meth:`close` stops the thread; queued reports that were not flushed are dropped. A
      report being retried at that moment is given up once the client is closed.

    The master stores reports idempotently (same key, same row), so the client's retry of a
    report whose answer was lost stores it once. Thread-safe.
    """

    def __init__(self, client: MasterClient, *, capacity: int = DEFAULT_CAPACITY) -> None:
        if capacity < 1:
            raise ValueError(f"capacity must be at least 1, got {capacity}")
        self._client = client
        self._capacity = capacity
        self._queue: collections.deque[tuple[str, Any]] = collections.deque()
        self._changed = threading.Condition()
        self._sending = False
        self._error: MasterError | None = None
        self._closed = False
        self._thread = threading.Thread(
            target=self._run, name=f"pedl-reports-trial-{client.trial_id}", daemon=True
        )
        self._thread.start()

    def send(self, path: str, body: Any) -> None:
        """Queue ``POST path`` (under ``/api/v1``) with the JSON ``body``."""
        with self._changed:
            self._check()
            while len(self._queue) >= self._capacity:
                self._changed.wait()
                self._check()
            self._queue.append((path, body))
            self._changed.notify_all()

    @property
    def waiting(self) -> int:
        """How many reports wait to be sent (the one being sent included)."""
        return len(self._queue)

    def flush(self) -> None:
        """Wait until every queued report was sent; raise the sender's failure, if any."""
        with self._changed:
            self._check()
            while self._queue or self._sending:
                self._changed.wait()
                self._check()

    def settle(self, timeout: float) -> bool:
        """Wait until every queued report was sent, but no longer than ``timeout`` seconds and
        not while the master cannot be reached (the client's latest try failed). Return
        whether everything was sent; raise the sender's failure, if any."""
        deadline = time.monotonic() + timeout
        with self._changed:
            self._check()
            while self._queue or self._sending:
                left = deadline - time.monotonic()
                if left <= 0 or self._client.unreachable:
                    return False
                self._changed.wait(min(left, SETTLE_POLL_S))
                self._check()
            return True

    def close(self) -> None:
        """Stop the thread; wait for it up to :data:`CLOSE_WAIT_S` when it is sending."""
        with self._changed:
            self._closed = True
            self._changed.notify_all()
        self._thread.join(CLOSE_WAIT_S)

    def _check(self) -> None:
        if self._error is not None:
            raise self._error
        if self._closed:
            raise RuntimeError("the trial's report sender is closed")

    def _run(self) -> None:
        while True:
            with self._changed:
                while not self._queue and not self._closed:
                    self._changed.wait()
                if self._closed:
                    return
                path, body = self._queue[0]
                self._sending = True
            error: MasterError | None = None
            try:
                self._client.post(path, body)
            except MasterError as err:
                error = err
            except Exception as err:  # a closed client, a body that is no JSON: no retry helps
                error = MasterError(f"POST {path}: {type(err).__name__}: {err}")
            with self._changed:
                self._sending = False
                if error is not None:
                    self._error = error
                else:
                    self._queue.popleft()
                self._changed.notify_all()
                if error is not None:
                    return
