"""The master's log retention: the trial logs of an ended experiment are deleted once its
``log_retention_days`` (``det experiment set log-retention``) have passed since it ended.

:class:`LogRetention` sweeps when the master starts and every :data:`SWEEP_INTERVAL_S`
seconds after, on a thread of its own (a sweep is one ``DELETE`` per batch of experiments
that expired; nothing is read back). Setting a retention that has already passed deletes
that experiment's logs at once (:mod:`pedl.master.api.experiments`).
"""

from __future__ import annotations

import logging
import threading

from pedl.db import Database
from pedl.db import logs as logs_repo

logger = logging.getLogger("pedl.master.logs")

SWEEP_INTERVAL_S = 3600.0
"""Seconds between two sweeps: a log outlives its retention by at most this."""


class LogRetention:
    """Deletes expired trial logs of ``database`` at :meth:`start` and every ``interval``
    seconds until :meth:`close`."""

    def __init__(self, database: Database, interval: float = SWEEP_INTERVAL_S) -> None:
        self.database = database
        self.interval = interval
        self._stop = threading.Event()
        self._thread: threading.Thread | None = None

    def sweep(self) -> int:
        """Delete the expired logs now; how many lines went (a failure is logged, and 0)."""
        try:
            with self.database.session(write=True) as session:
                deleted = logs_repo.delete_expired_logs(session)
        except Exception:  # a busy or unreachable database: the next sweep tries again
            logger.exception("deleting the trial logs past their retention failed")
            return 0
        if deleted:
            logger.info("deleted %d trial log lines past their experiments' retention", deleted)
        return deleted

    def start(self) -> None:
        self._thread = threading.Thread(target=self._loop, name="pedl-log-retention", daemon=True)
        self._thread.start()

    def _loop(self) -> None:
        self.sweep()
        while not self._stop.wait(self.interval):
            self.sweep()

    def close(self) -> None:
        self._stop.set()
        if self._thread is not None:
            self._thread.join()
            self._thread = None
