"""Group commit of metric reports: one writer thread, one transaction per batch of requests."""

from __future__ import annotations

import logging
import queue
import threading
from collections.abc import Sequence
from concurrent.futures import Future
from dataclasses import dataclass, field

from sqlalchemy import select

from pedl.master.db import metrics as metrics_repo
from pedl.master.db import trials as trials_repo
from pedl.master.db._database import Database
from pedl.master.db._errors import NotFoundError
from pedl.master.db._models import Trial
from pedl.master.db.metrics import MetricRow

logger = logging.getLogger("pedl.master.db")

DEFAULT_TIMEOUT_S = 30.0


class IngestUnavailableError(RuntimeError):
    """The writer cannot take or finish this request: it was stopped, or the request was not
    committed within the caller's timeout."""


@dataclass
class _Request:
    trial_id: int
    rows: Sequence[MetricRow]
    future: Future[int] = field(default_factory=Future)

    @property
    def distinct_keys(self) -> int:
        return len({(row.kind, row.total_batches) for row in self.rows})


_STOP = object()


class MetricIngestor:
    """Stores metric reports of many concurrent requests with one writer thread (group commit).

    :meth:`ingest` (any thread) queues one request's rows and blocks until they are committed.
    The writer takes the oldest queued request plus everything queued behind it, up to
    ``max_requests`` requests or ``max_rows`` rows, and writes that batch in ONE transaction:
    one existence query for all its trials, then :func:`~pedl.master.db.metrics.upsert_metrics`
    once per trial with that trial's rows in arrival order (same idempotent upsert: the last
    row for a ``(kind, total_batches)`` wins); it commits once, then answers every request.

    Contract:

    - A request is answered only after its rows are committed (or with its error). Its rows
      are always written in one transaction, never split.
    - Requests are applied in arrival (queue) order, within and across batches.
    - A request for a trial that does not exist fails alone with
      :class:`~pedl.master.db.NotFoundError`; the rest of its batch is stored. If the batch
      transaction fails for any other reason (e.g. a trial deleted concurrently), each of
      its requests is retried in its own transaction and gets its own result or error.
    - A request still queued when its caller times out is dropped (never written); one
      already being written when the caller times out may still be committed (a re-send is
      harmless: the upsert is idempotent).
    - :meth:`stop` drains: every request queued before it is written and answered, then
      the thread exits; later calls to :meth:`ingest` raise :class:`IngestUnavailableError`.
      Requests queued before :meth:`start` wait and are written first.

    On SQLite the writer takes the :class:`Database`'s writer lock like any other serialized
    writer of this process.
    """

    def __init__(
        self, database: Database, *, max_rows: int = 5_000, max_requests: int = 256
    ) -> None:
        self.database = database
        self.max_rows = max_rows
        self.max_requests = max_requests
        self._queue: queue.SimpleQueue[_Request | object] = queue.SimpleQueue()
        self._lock = threading.Lock()
        self._stopped = False
        self._thread: threading.Thread | None = None

    def start(self) -> None:
        """Start the writer thread (once); requests queued before are written first."""
        with self._lock:
            if self._thread is not None or self._stopped:
                raise RuntimeError("the metric ingestor was already started")
            self._thread = threading.Thread(
                target=self._run, name="pedl-metric-writer", daemon=True
            )
            self._thread.start()

    def stop(self, timeout: float | None = None) -> None:
        """Write everything queued so far, then stop the thread (waits up to ``timeout``
        seconds for it). Idempotent; a never-started ingestor just refuses new requests."""
        with self._lock:
            if self._stopped:
                return
            self._stopped = True
            self._queue.put(_STOP)
        if self._thread is not None:
            self._thread.join(timeout)

    def submit(self, trial_id: int, rows: Sequence[MetricRow]) -> Future[int]:
        """Queue ``rows`` of one trial; the future resolves to the number of distinct
        ``(kind, total_batches)`` keys written once they are committed, or raises the
        request's error. Raises :class:`IngestUnavailableError` once :meth:`stop` was called
        (before :meth:`start`, requests wait in the queue)."""
        request = _Request(trial_id, list(rows))
        with self._lock:
            if self._stopped:
                raise IngestUnavailableError("the metric writer is stopped")
            self._queue.put(request)
        return request.future

    def ingest(
        self, trial_id: int, rows: Sequence[MetricRow], *, timeout: float = DEFAULT_TIMEOUT_S
    ) -> int:
        """:meth:`submit` and wait: the number of distinct keys written, once committed.

        Raises the request's own error (:class:`~pedl.master.db.NotFoundError` for an unknown
        trial, a database error otherwise), or :class:`IngestUnavailableError` if the writer
        is not running or has not committed the request within ``timeout`` seconds."""
        future = self.submit(trial_id, rows)
        try:
            return future.result(timeout=timeout)
        except TimeoutError:
            future.cancel()  # dropped if still queued; no effect once it is being written
            raise IngestUnavailableError(
                f"the metric writer did not commit within {timeout:g} s"
            ) from None

    def _run(self) -> None:
        stopping = False
        while not stopping:
            item = self._queue.get()
            if item is _STOP:
                break
            assert isinstance(item, _Request)
            batch = [item]
            rows = len(item.rows)
            while len(batch) < self.max_requests and rows < self.max_rows:
                try:
                    item = self._queue.get_nowait()
                except queue.Empty:
                    break
                if item is _STOP:
                    stopping = True
                    break
                assert isinstance(item, _Request)
                batch.append(item)
                rows += len(item.rows)
            live = [request for request in batch if request.future.set_running_or_notify_cancel()]
            if live:
                self._write(live)

    def _write(self, batch: list[_Request]) -> None:
        try:
            missing = self._write_batch(batch)
        except Exception:
            logger.info("metric batch of %d requests failed; retrying one by one", len(batch))
            for request in batch:
                self._write_one(request)
            return
        for request in batch:
            if request.trial_id in missing:
                request.future.set_exception(NotFoundError("trial", request.trial_id))
            else:
                request.future.set_result(request.distinct_keys)

    def _write_batch(self, batch: list[_Request]) -> set[int]:
        """Write the batch in one transaction; returns the ids of trials that do not exist
        (their requests are skipped)."""
        trial_ids = {request.trial_id for request in batch}
        by_trial: dict[int, list[MetricRow]] = {}
        with self.database.session(write=True, serialize=True) as session:
            found = set(session.scalars(select(Trial.id).where(Trial.id.in_(trial_ids))))
            for request in batch:
                if request.trial_id in found:
                    by_trial.setdefault(request.trial_id, []).extend(request.rows)
            for trial_id, rows in by_trial.items():
                metrics_repo.upsert_metrics(session, trial_id, rows)
        return trial_ids - found

    def _write_one(self, request: _Request) -> None:
        try:
            with self.database.session(write=True, serialize=True) as session:
                trials_repo.get_trial(session, request.trial_id)
                written = metrics_repo.upsert_metrics(session, request.trial_id, request.rows)
        except Exception as err:  # answered to the request, never kills the writer
            request.future.set_exception(err)
        else:
            request.future.set_result(written)
