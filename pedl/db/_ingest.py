"""Group commit of metric reports: writer threads, one transaction per batch of requests."""

from __future__ import annotations

import asyncio
import logging
import queue
import threading
import time
from collections.abc import Mapping, Sequence
from concurrent.futures import Future
from contextlib import suppress
from dataclasses import dataclass
from typing import Any, NamedTuple, cast

from sqlalchemy import bindparam, select
from sqlalchemy.exc import IntegrityError
from sqlalchemy.orm import Session

from pedl.db import metrics as metrics_repo
from pedl.db import trials as trials_repo
from pedl.db._database import Database
from pedl.db._errors import ConflictError, NotFoundError
from pedl.db._models import Trial
from pedl.db.metrics import (
    AnyMetricRow,
    MetricReport,
    ReportText,
    as_metric_row,
    most_batches,
    report_text,
    row_keys,
    summarize_report,
)
from pedl.vocabulary import MetricKind

logger = logging.getLogger("pedl.db")

DEFAULT_TIMEOUT_S = 30.0
DEFAULT_LINGER_S = 0.005
DEFAULT_LINGER_ROWS = 1_000


class IngestUnavailableError(RuntimeError):
    """The writer cannot take or finish this request: it was stopped, or the request was not
    committed within the caller's timeout."""


class IngestOverloadedError(IngestUnavailableError):
    """More requests are queued than the writer's ``max_queued``: this one was refused at once
    (nothing was written; re-send it later)."""


class TrialTokenError(PermissionError):
    """A request's token does not belong to its trial; ``owner`` is the trial it belongs
    to, ``None`` if none."""

    def __init__(self, trial_id: int, owner: int | None) -> None:
        super().__init__(f"the token is not valid for trial {trial_id}")
        self.trial_id = trial_id
        self.owner = owner


@dataclass(eq=False)
class _Request:
    """One request; answered through ``future`` (:meth:`MetricIngestor.submit`) or, from an
    event loop, through ``waiter`` on ``loop`` (:meth:`MetricIngestor.submit_async`).
    Everything the writer needs per row is worked out by the submitting thread
    (:func:`_request`): the writer thread, which every report waits for, runs little
    Python beside its SQL."""

    trial_id: int
    rows: Sequence[AnyMetricRow]
    token_hash: str | None
    report: Sequence[AnyMetricRow] | ReportText
    """The rows, or their body's text where the database may store that."""
    distinct_keys: int
    most_batches: int
    future: Future[int] | None = None
    waiter: asyncio.Future[int] | None = None
    loop: asyncio.AbstractEventLoop | None = None

    def claim(self) -> bool:
        """Whether the request is still wanted (its caller has not given up): the writer
        takes it then, and it will be written."""
        if self.waiter is not None:
            return not self.waiter.done()  # cancelled by its caller's timeout
        assert self.future is not None
        return self.future.set_running_or_notify_cancel()


BIG_REPORT_ROWS = 100
"""A report of this many rows or more is big: PostgreSQL reads it from its text, and a bulk
writer stores it (:class:`MetricIngestor`). Smaller reports go to PostgreSQL as rows: a batch's
rows share one statement, where each text is a statement of its own (a round trip, the trial
check). With 200 trials reporting 1 to 5 rows 5 times a second, texts raised the reports' p99
latency about 2x."""


class CheckedReport(NamedTuple):
    """A report whose text the database may store (:func:`check_report`), with what the
    writer needs of its rows: so a report can be checked in another process (the master's
    read processes: :mod:`pedl.master.api._report_check`) and handed to
    :meth:`MetricIngestor.submit_checked_async` without its rows made here (``text.rows``
    may make them when read, which the writer does only to name a refused row or to store the
    report as rows after its batch failed)."""

    text: ReportText
    distinct_keys: int
    most_batches: int


def check_report(body: bytes, rows: Sequence[MetricReport], dialect: str) -> CheckedReport | None:
    """``body`` (validated by the API's schema into ``rows``) as a :class:`CheckedReport` for
    ``dialect``, or ``None`` where the writer stores it as rows: where
    :func:`~pedl.db.metrics.report_text` refuses the text, and on PostgreSQL below
    :data:`BIG_REPORT_ROWS` rows."""
    if dialect == "postgresql" and len(rows) < BIG_REPORT_ROWS:
        return None
    summary = summarize_report(rows)
    text = report_text(body, rows, dialect, summary)
    if text is None:
        return None
    return CheckedReport(text, summary.keys, summary.most)


def _request(
    trial_id: int,
    rows: Sequence[AnyMetricRow],
    token: str | None,
    body: bytes | None,
    dialect: str,
    **answer: Any,
) -> _Request:
    """A :class:`_Request`, its per-row work done here (``body``: the text the rows were
    validated from, read by the database where :func:`check_report` allows)."""
    rows = list(rows)
    token_hash = None if token is None else trials_repo.hash_token(token)
    checked = None
    if body is not None:
        checked = check_report(body, cast(Sequence[MetricReport], rows), dialect)
    if checked is not None:
        return _checked_request(trial_id, checked, token_hash, **answer)
    return _Request(
        trial_id, rows, token_hash, rows, len(row_keys(rows)), most_batches(rows), **answer
    )


def _checked_request(
    trial_id: int, checked: CheckedReport, token_hash: str | None, **answer: Any
) -> _Request:
    text = checked.text
    return _Request(
        trial_id,
        text.rows,
        token_hash,
        text,
        checked.distinct_keys,
        checked.most_batches,
        **answer,
    )


def _answer(outcomes: list[tuple[_Request, int | BaseException]]) -> None:
    """Resolve each request's future or waiter: the waiters of one event loop in ONE
    callback on that loop (one wake-up per batch, not one per request)."""
    by_loop: dict[asyncio.AbstractEventLoop, list[tuple[_Request, int | BaseException]]] = {}
    for request, outcome in outcomes:
        if request.loop is not None:
            by_loop.setdefault(request.loop, []).append((request, outcome))
        elif isinstance(outcome, BaseException):
            assert request.future is not None
            request.future.set_exception(outcome)
        else:
            assert request.future is not None
            request.future.set_result(outcome)
    for loop, answered in by_loop.items():
        with suppress(RuntimeError):  # the loop is closed: nobody waits any more
            loop.call_soon_threadsafe(_settle, answered)


def _settle(answered: list[tuple[_Request, int | BaseException]]) -> None:
    for request, outcome in answered:
        waiter = request.waiter
        if waiter is None or waiter.done():
            continue
        if isinstance(outcome, BaseException):
            waiter.set_exception(outcome)
        else:
            waiter.set_result(outcome)


_STOP = object()


class MetricIngestor:
    """Stores metric reports of many concurrent requests with writer threads (group commit).

    :meth:`ingest` (any thread) queues one request's rows and blocks until they are committed.
    There is one writer thread, or on PostgreSQL ``writers`` of them, each with its queue: the
    first takes the small reports; the others, bulk writers, take the big ones
    (:data:`BIG_REPORT_ROWS` rows or more), each the one with the fewest requests, so that the
    server stores several big reports at once while small reports' batches are what one writer
    makes of them (more writers would split them into more transactions and commits, each
    slower). A trial that has requests queued or being written sends its next one to the same
    writer, whatever its size: a trial's requests never wait on two writers at once.
    A writer takes the oldest request of its queue plus everything queued behind it, up to
    ``max_requests`` requests or ``max_rows`` rows, and writes that batch in ONE transaction:
    one query checking all its trials (and tokens), then
    :func:`~pedl.db.metrics.upsert_reports` with the requests in arrival order (one
    statement for the batch's rows, plus one per report the database reads from its text; same
    idempotent upsert: the last row for a ``(trial, kind, total_batches)`` wins); it commits
    once, then answers every request. The texts go first as plain inserts (``fresh``: a
    fifth cheaper for the database); if a key was stored before (a re-sent report), the batch
    is rolled back and written again with the upsert.

    Contract:

    - A request is answered only after its rows are committed (or with its error). Its rows
      are always written in one transaction, never split.
    - A trial's requests are applied in arrival (queue) order, within and across batches.
    - A request with a token that is not its trial's (a revoked one included: see
      :mod:`pedl.db.trials`) fails alone with :class:`TrialTokenError`, one without a
      token for a trial that does not exist with :class:`~pedl.db.NotFoundError`, one
      for a trial that has ended (a terminal state) with
      :class:`~pedl.db.ConflictError` (``field="state"``), and one with a row past
      the trial's :meth:`batch_limit` with :class:`~pedl.db.ConflictError`
      (``field="rows[i].total_batches"``); the rest of its batch is stored. These checks are
      made in the batch's transaction, by one query for all its trials. If the batch
      transaction fails for any other reason (e.g. a trial deleted concurrently), each of
      its requests is retried in its own transaction and gets its own result or error.
    - A request still queued when its caller times out (cancels its future) is dropped
      (never written); one the writer has already taken may still be committed (a re-send is
      harmless: the upsert is idempotent).
    - :meth:`stop` drains: every request queued before it is written and answered, then
      the threads exit; later calls to :meth:`ingest` raise :class:`IngestUnavailableError`.
      Requests queued before :meth:`start` wait and are written first.
    - Batching: the writer takes the oldest request and everything queued behind it; when
      its previous batch held more than one request (concurrent reporters), it also waits up
      to ``linger_s`` (default 5 ms) for more, so a batch costs one transaction for many
      requests, unless it already holds ``linger_rows`` rows (default 1,000: a transaction's
      fixed cost is small beside theirs): then it is written at once, and the next requests
      are parsed while it is (with a few reporters of big bodies, lingering left the writer
      waiting for requests whose senders waited for it). A lone reporter is written at once.
    - With ``max_queued``, a request that finds that many requests already queued is refused
      at once with :class:`IngestOverloadedError` (load shedding: the API answers 503 with
      Retry-After and the trial re-sends).
    - A request with a value no reader could use is refused at once, before it is queued,
      with :class:`~pedl.db.metrics.MetricValueError` (see
      :data:`~pedl.db.metrics.MAX_METRIC_MAGNITUDE`).

    On SQLite the writer takes the :class:`Database`'s writer lock like any other serialized
    writer of this process.
    """

    def __init__(
        self,
        database: Database,
        *,
        max_rows: int = 5_000,
        max_requests: int = 256,
        max_queued: int | None = None,
        linger_s: float = DEFAULT_LINGER_S,
        linger_rows: int = DEFAULT_LINGER_ROWS,
        writers: int = 1,
    ) -> None:
        self.database = database
        self.linger_s = linger_s
        self.linger_rows = linger_rows
        self.max_rows = max_rows
        self.max_requests = max_requests
        self.max_queued = max_queued
        if writers < 1 or (writers > 1 and database.dialect == "sqlite"):
            raise ValueError(f"writers={writers}: 1 on SQLite, at least 1 on PostgreSQL")
        self._queues: list[queue.SimpleQueue[_Request | object]] = [
            queue.SimpleQueue() for _ in range(writers)
        ]
        self._writing: dict[int, list[int]] = {}
        """Each trial with requests queued or being written: [its writer, how many]."""
        self._load = [0] * writers
        """Each writer's requests, queued or being written."""
        self._lock = threading.Lock()
        self._stopped = False
        self._threads: list[threading.Thread] = []
        self._batch_limits: dict[int, int] = {}

    MAX_LIMITS = 100_000
    """How many trials' limits :meth:`limit_batches` keeps (the oldest are forgotten)."""

    def limit_batches(self, trial_id: int, batches: int) -> None:
        """The trial was asked to train to ``batches``: from now on its rows past the largest
        count it was asked (this one or an earlier, larger one) are refused. Trials never
        limited (a trial that no searcher drives) are not checked. The limits live in this
        process's memory (a restarted master learns them again as each new attempt asks
        for its operation, before it may report)."""
        with self._lock:
            known = self._batch_limits.get(trial_id)
            self._batch_limits[trial_id] = batches if known is None else max(known, batches)
            if len(self._batch_limits) > self.MAX_LIMITS:
                del self._batch_limits[next(iter(self._batch_limits))]

    def batch_limit(self, trial_id: int) -> int | None:
        """The largest batch count the trial was asked to train to (:meth:`limit_batches`),
        ``None`` if it was never limited."""
        return self._batch_limits.get(trial_id)

    def start(self) -> None:
        """Start the writer threads (once); requests queued before are written first."""
        with self._lock:
            if self._threads or self._stopped:
                raise RuntimeError("the metric ingestor was already started")
            self._threads = [
                threading.Thread(
                    target=self._run,
                    args=(shard,),
                    name="pedl-metric-writer" + (f"-bulk-{index}" if index else ""),
                    daemon=True,
                )
                for index, shard in enumerate(self._queues)
            ]
            for thread in self._threads:
                thread.start()

    def stop(self, timeout: float | None = None) -> None:
        """Write everything queued so far, then stop the threads (waits up to ``timeout``
        seconds for them). Idempotent; a never-started ingestor just refuses new requests."""
        with self._lock:
            if self._stopped:
                return
            self._stopped = True
            for shard in self._queues:
                shard.put(_STOP)
        deadline = None if timeout is None else time.monotonic() + timeout
        for thread in self._threads:
            thread.join(None if deadline is None else max(0.0, deadline - time.monotonic()))

    def submit(
        self, trial_id: int, rows: Sequence[AnyMetricRow], *, token: str | None = None
    ) -> Future[int]:
        """Queue ``rows`` of one trial; the future resolves to the number of distinct
        ``(kind, total_batches)`` keys written once they are committed, or raises the
        request's error. With ``token`` the writer first checks, in the same transaction, that
        it is the trial's token (else :class:`TrialTokenError`, also for an unknown trial).
        Raises :class:`IngestUnavailableError` once :meth:`stop` was called (before
        :meth:`start`, requests wait in the queue), :class:`IngestOverloadedError` when
        ``max_queued`` requests are already waiting, and
        :class:`~pedl.db.metrics.MetricValueError` for a value no reader could use."""
        metrics_repo.check_metric_values(rows)
        request = _request(trial_id, rows, token, None, self.database.dialect, future=Future())
        self._enqueue(request)
        assert request.future is not None
        return request.future

    def submit_async(
        self,
        trial_id: int,
        rows: Sequence[AnyMetricRow],
        *,
        token: str | None = None,
        values_checked: bool = False,
        body: bytes | None = None,
    ) -> asyncio.Future[int]:
        """:meth:`submit` for a caller on an event loop (call it on that loop): the returned
        future of that loop is resolved there, with those of the other requests of the same
        batch in one callback (one wake-up of the loop per batch). Cancelling it (its caller
        gave up) drops the request if the writer has not taken it yet. ``values_checked``:
        the caller has already refused every value beyond
        :data:`~pedl.db.metrics.MAX_METRIC_MAGNITUDE` (the API's schema did), so they are
        not checked again. ``body``: the JSON text the API's schema validated into ``rows``
        (dicts); the writer stores the rows from that text when it says exactly
        what they say (:func:`~pedl.db.metrics.report_text`, checked here, on the event loop:
        off the writer's path, which every report waits for)."""
        if not values_checked:
            metrics_repo.check_metric_values(rows)
        loop = asyncio.get_running_loop()
        waiter: asyncio.Future[int] = loop.create_future()
        self._enqueue(
            _request(trial_id, rows, token, body, self.database.dialect, waiter=waiter, loop=loop)
        )
        return waiter

    def submit_checked_async(
        self, trial_id: int, checked: CheckedReport, *, token: str | None = None
    ) -> asyncio.Future[int]:
        """:meth:`submit_async` for a report already checked (:func:`check_report`, maybe in
        another process; its values within the bound) for this database: its rows are not
        read here. ``ValueError`` if it was checked for another database."""
        if checked.text.dialect != self.database.dialect:
            raise ValueError(
                f"a report checked for {checked.text.dialect}, not {self.database.dialect}"
            )
        loop = asyncio.get_running_loop()
        waiter: asyncio.Future[int] = loop.create_future()
        token_hash = None if token is None else trials_repo.hash_token(token)
        self._enqueue(_checked_request(trial_id, checked, token_hash, waiter=waiter, loop=loop))
        return waiter

    def _enqueue(self, request: _Request) -> None:
        with self._lock:
            if self._stopped:
                raise IngestUnavailableError("the metric writer is stopped")
            if self.max_queued is not None and self.queued >= self.max_queued:
                raise IngestOverloadedError(
                    f"the metric writer has {self.max_queued} reports queued; retry later"
                )
            self._queues[self._writer_of(request)].put(request)

    def _writer_of(self, request: _Request) -> int:
        """The writer that takes ``request`` (counted as its trial's and its writer's; under
        ``_lock``): its trial's while it has requests there, else the first for a small
        report, the bulk writer with the fewest requests for a big one."""
        writing = self._writing.get(request.trial_id)
        if writing is None:
            load = self._load
            writer = 0
            if len(load) > 1 and len(request.rows) >= BIG_REPORT_ROWS:
                writer = min(range(1, len(load)), key=load.__getitem__)
            writing = self._writing[request.trial_id] = [writer, 0]
        writing[1] += 1
        self._load[writing[0]] += 1
        return writing[0]

    def _written(self, batch: list[_Request]) -> None:
        """``batch`` is written (or dropped): its trials' next requests may go to any writer."""
        with self._lock:
            for request in batch:
                writing = self._writing[request.trial_id]
                writing[1] -= 1
                self._load[writing[0]] -= 1
                if not writing[1]:
                    del self._writing[request.trial_id]

    def ingest(
        self,
        trial_id: int,
        rows: Sequence[AnyMetricRow],
        *,
        token: str | None = None,
        timeout: float = DEFAULT_TIMEOUT_S,
    ) -> int:
        """:meth:`submit` and wait: the number of distinct keys written, once committed.

        Raises the request's own error (:class:`TrialTokenError` for a wrong ``token``,
        :class:`~pedl.db.NotFoundError` for an unknown trial when no token is given, a
        database error otherwise), or :class:`IngestUnavailableError` if the writer is stopped
        or has not committed the request within ``timeout`` seconds."""
        future = self.submit(trial_id, rows, token=token)
        try:
            return future.result(timeout=timeout)
        except TimeoutError:
            future.cancel()  # dropped if still queued; no effect once it is being written
            raise IngestUnavailableError(
                f"the metric writer did not commit within {timeout:g} s"
            ) from None

    @property
    def queued(self) -> int:
        """Requests waiting for the writers now (approximate)."""
        return sum(shard.qsize() for shard in self._queues)

    def _run(self, shard: queue.SimpleQueue[_Request | object]) -> None:
        stopping = False
        last_batch = 1
        while not stopping:
            item = shard.get()
            if item is _STOP:
                break
            assert isinstance(item, _Request)
            batch = [item]
            rows = len(item.rows)
            # Under concurrent load (the last batch had company), wait up to linger_s for more
            # requests: fewer, bigger transactions cost far less CPU per request than many
            # one-request ones. A lone reporter never waits, nor does a batch of linger_rows.
            deadline = time.monotonic() + (self.linger_s if last_batch > 1 else 0.0)
            while len(batch) < self.max_requests and rows < self.max_rows:
                try:
                    item = shard.get_nowait()
                except queue.Empty:
                    if rows >= self.linger_rows:
                        break
                    wait = deadline - time.monotonic()
                    if wait <= 0:
                        break
                    try:
                        item = shard.get(timeout=wait)
                    except queue.Empty:
                        break
                if item is _STOP:
                    stopping = True
                    break
                assert isinstance(item, _Request)
                batch.append(item)
                rows += len(item.rows)
            last_batch = len(batch)
            live = [request for request in batch if request.claim()]
            if live:
                self._write(live)
            self._written(batch)

    def _write(self, batch: list[_Request]) -> None:
        try:
            try:
                refused = self._write_batch(batch, fresh=True)
            except IntegrityError:  # a key stored before (a re-send): again, as upserts
                refused = self._write_batch(batch, fresh=False)
        except Exception:
            logger.info("metric batch of %d requests failed; retrying one by one", len(batch))
            _answer([(request, self._write_one(request)) for request in batch])
            return
        _answer([(request, refused.get(request, request.distinct_keys)) for request in batch])

    def _write_batch(self, batch: list[_Request], *, fresh: bool) -> dict[_Request, Exception]:
        """Write the batch in one transaction, skipping the requests refused (unknown or
        ended trial, wrong token, a row past the trial's limit); returns those with their
        errors. ``fresh``: the reports' texts as plain inserts
        (:func:`~pedl.db.metrics.upsert_reports`), which a key already stored fails."""
        with self.database.session(write=True, serialize=True) as session:
            refused = _refused(session, batch, self._batch_limits)
            accepted = [(r.trial_id, r.report) for r in batch if r not in refused]
            metrics_repo.upsert_reports(session, accepted, fresh=fresh)
        return refused

    def _write_one(self, request: _Request) -> int | Exception:
        """Write one request in its own transaction, from its rows (never its text: a text
        the database could not read fails its batch, and is then stored like any other report):
        the number of keys written, or the error to answer it with."""
        try:
            with self.database.session(write=True, serialize=True) as session:
                refused = _refused(session, [request], self._batch_limits)
                if request in refused:
                    raise refused[request]
                return metrics_repo.upsert_metrics(session, request.trial_id, request.rows)
        except Exception as err:  # answered to the request, never kills the writer
            return err


# _refused's queries, built once: building the select per batch held the GIL for another
# 0.07-0.17 ms a batch (a third of the query's time; bench/RESULTS.md "P5a, 2026-12-02 17:40").
_TRIALS_OF = select(Trial.id, Trial.token_hash, Trial.state).where(
    Trial.id.in_(bindparam("ids", expanding=True))
)
_OWNERS_OF = select(Trial.token_hash, Trial.id).where(
    Trial.token_hash.in_(bindparam("hashes", expanding=True))
)


def _refused(
    session: Session, requests: list[_Request], limits: Mapping[int, int]
) -> dict[_Request, Exception]:
    """The requests that must not be written, with their errors: one query for all trials
    (plus one for the owners of wrong tokens, if any)."""
    ids = list({request.trial_id for request in requests})
    stored = {
        trial_id: (token_hash, state)
        for trial_id, token_hash, state in session.execute(_TRIALS_OF, {"ids": ids})
    }
    refused: dict[_Request, Exception] = {}
    wrong: list[_Request] = []
    for request in requests:
        found = stored.get(request.trial_id)
        if request.token_hash is not None and (found is None or found[0] != request.token_hash):
            wrong.append(request)
        elif found is None:
            refused[request] = NotFoundError("trial", request.trial_id)
        elif found[1].is_terminal:
            refused[request] = ConflictError(
                f"trial {request.trial_id} has ended ({found[1].value}): it takes no more metrics",
                field="state",
            )
        elif (past := _past_limit(request, limits.get(request.trial_id))) is not None:
            refused[request] = past
    if wrong:
        hashes = list({request.token_hash for request in wrong})
        owners: dict[str | None, int] = {
            token_hash: trial_id
            for token_hash, trial_id in session.execute(_OWNERS_OF, {"hashes": hashes})
        }
        for request in wrong:
            refused[request] = TrialTokenError(request.trial_id, owners.get(request.token_hash))
    return refused


def _past_limit(request: _Request, limit: int | None) -> ConflictError | None:
    """The error for the request's first row past ``limit`` batches, if it has one."""
    if limit is None or request.most_batches <= limit:
        return None
    for index, any_row in enumerate(request.rows):
        row = as_metric_row(any_row)
        if row.total_batches > limit:
            return ConflictError(
                f"a {MetricKind(row.kind).value} row at {row.total_batches} batches: trial "
                f"{request.trial_id} was asked to train to {limit} batches",
                field=f"rows[{index}].total_batches",
            )
    return None
