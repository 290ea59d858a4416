"""``/api/v1/trials``: a trial, its metrics, logs and checkpoints.

The write routes are for the trial process and require its bearer token; the reads are for
signed-in users.
"""

from __future__ import annotations

import asyncio
from collections.abc import Sequence
from datetime import datetime
from typing import Annotated, Any, cast

import anyio.to_thread
from fastapi import APIRouter, Depends, Query, Request, Response
from fastapi.security import HTTPAuthorizationCredentials
from pydantic import Field

from pedl.db import (
    CheckedReport,
    ConflictError,
    IngestUnavailableError,
    LogLine,
    MetricIngestor,
    MetricRow,
    TrialTokenError,
)
from pedl.db import checkpoints as checkpoints_repo
from pedl.db import logs as logs_repo
from pedl.db import metrics as metrics_repo
from pedl.db import trials as trials_repo
from pedl.db.metrics import AnyMetricRow, MetricReport, MetricValueError
from pedl.exec import describe_status
from pedl.master.api._auth import (
    USER_AUTH_RESPONSES,
    TrialAuth,
    _bearer,
    bearer_token,
    require_user,
    token_error,
)
from pedl.master.api._convert import checkpoint_public
from pedl.master.api._deps import (
    DatabaseDep,
    Limit,
    Offset,
    ReadSession,
    TrialId,
    WriteSession,
)
from pedl.master.api._errors import AUTH_RESPONSES, ERROR_RESPONSES, ApiError
from pedl.master.api._schemas import (
    FAST_METRICS_BATCH,
    MAX_BIGINT,
    CheckpointCreate,
    CheckpointPublic,
    ErrorResponse,
    LogLinePublic,
    LogsBatch,
    LogsIngested,
    MetricPublic,
    MetricsBatch,
    MetricsIngested,
    Page,
    TrialPublic,
    TrialWorkerPublic,
)
from pedl.master.orchestrator import Orchestrator
from pedl.vocabulary import CheckpointState, MetricKind

router = APIRouter(prefix="/trials", tags=["trials"], responses=ERROR_RESPONSES)

Cursor = Annotated[int | None, Query(ge=-1, le=MAX_BIGINT)]


@router.get("/{trial_id}", dependencies=[require_user], responses=USER_AUTH_RESPONSES)
async def get_trial(trial_id: TrialId, database: DatabaseDep) -> TrialPublic:
    """One trial (one worker-thread hop holding one short read session)."""

    def read() -> TrialPublic:
        with database.session() as session:
            return TrialPublic.model_validate(trials_repo.get_trial(session, trial_id))

    return await anyio.to_thread.run_sync(read)


def get_metric_ingestor(request: Request) -> MetricIngestor:
    """The app's metric writer (created by ``create_app``, running while the app is)."""
    ingestor = request.app.state.metric_ingestor
    assert isinstance(ingestor, MetricIngestor)
    return ingestor


MetricIngestorDep = Annotated[MetricIngestor, Depends(get_metric_ingestor)]

INGEST_TIMEOUT_S = 30.0


async def report_token(
    credentials: Annotated[HTTPAuthorizationCredentials | None, Depends(_bearer)],
) -> str:
    """:func:`~pedl.master.api._auth.bearer_token` without a worker thread (it does no I/O)."""
    return bearer_token(credentials)


@router.post(
    "/{trial_id}/metrics",
    responses={
        **AUTH_RESPONSES,
        503: {
            "model": ErrorResponse,
            "description": "The metric writer is overloaded, stuck or stopped (Retry-After)",
        },
    },
)
async def report_metrics(
    trial_id: TrialId,
    token: Annotated[str, Depends(report_token)],
    body: MetricsBatch,
    ingestor: MetricIngestorDep,
) -> MetricsIngested:
    """Store a batch of training/validation rows (idempotent upsert on
    ``(kind, total_batches)``: re-sending after a resume neither loses nor doubles a row).

    Answers only once the rows are committed. The rows go to the app's
    :class:`~pedl.db.MetricIngestor`, which writes the reports of all concurrent
    requests in one transaction (group commit); the route awaits it on the event loop (no
    worker thread, no connection of its own). The trial's token is checked in that
    transaction too, by the writer's one query for the whole batch (no read of its own per
    request): 401/403 as for every trial write (a finished attempt's token is revoked: 401).
    409 for a trial that has ended (``state``) or a row past the batch count the searcher
    asked the trial to train to (``rows[i].total_batches``); 422 for a value beyond
    ±1e300 (``rows[i].metrics.<name>``, see
    :data:`~pedl.db.metrics.MAX_METRIC_MAGNITUDE`). 503 with Retry-After if the
    writer's queue is full (``max_queued_reports``; nothing stored) or it has not committed
    the rows within 30 s (they may still be stored: re-sending is safe).
    """
    return await ingest_report(ingestor, trial_id, metric_rows(body), token)


def metric_rows(body: MetricsBatch) -> list[MetricRow]:
    """The rows of a validated ``POST /trials/{id}/metrics`` body."""
    return [
        MetricRow(
            report.kind,
            report.total_batches,
            report.metrics,
            report.total_records,
            report.total_epochs,
            report.reported_at,
        )
        for report in body.rows
    ]


def fast_metric_rows(body: bytes) -> list[MetricReport] | None:
    """The rows of a ``POST /trials/{id}/metrics`` body validated by
    :data:`~pedl.master.api._schemas.FAST_METRICS_BATCH` (every value within the bound, a
    non-finite one as its string), as that schema made them (dicts: no object made per row),
    or ``None`` when that schema refuses it or it holds a ``\\u0000`` escape (perhaps a NUL
    in a metric name, which that schema does not check): the route's :class:`MetricsBatch`
    then decides, and its errors name the field."""
    if b"\\u0000" in body:
        return None
    try:
        rows = FAST_METRICS_BATCH.validate_json(body)["rows"]
    except ValueError:  # pydantic's ValidationError included
        return None
    return cast(list[MetricReport], rows)


async def ingest_report(
    ingestor: MetricIngestor,
    trial_id: int,
    rows: Sequence[AnyMetricRow] | CheckedReport,
    token: str,
    *,
    values_checked: bool = False,
    body: bytes | None = None,
) -> MetricsIngested:
    """Hand one report to the metric writer and await its commit (no worker thread); raises
    :class:`ApiError` 401/403 (token), 409 (the trial ended, a row past its length), 422 (a
    value beyond the bound), 503 (queue full, writer stuck or stopped), or the writer's own
    error (404 unknown trial, a database error). Shared by the route and the app's fast path
    (:class:`pedl.master.api._app.MetricReportFastPath`), whose schema has already checked
    the values' bound (``values_checked``) and hands over the body's text (``body``, see
    :meth:`~pedl.db.MetricIngestor.submit_async`), or the report a read process checked
    (``rows``: a :class:`~pedl.db.CheckedReport`)."""
    try:
        if isinstance(rows, CheckedReport):
            waiter = ingestor.submit_checked_async(trial_id, rows, token=token)
        else:
            waiter = ingestor.submit_async(
                trial_id, rows, token=token, values_checked=values_checked, body=body
            )
        try:
            # On timeout the waiter is cancelled: the writer drops the report if still queued.
            async with asyncio.timeout(INGEST_TIMEOUT_S):
                written = await waiter
        except TimeoutError:
            raise IngestUnavailableError(
                f"the metric writer did not commit within {INGEST_TIMEOUT_S:g} s"
            ) from None
    except IngestUnavailableError as err:
        raise ApiError(503, str(err)) from err
    except TrialTokenError as err:
        raise token_error(err.owner, trial_id) from err
    except ConflictError as err:
        raise ApiError(409, err.message, field=err.field) from err
    except MetricValueError as err:
        raise ApiError(422, err.message, field=err.field) from err
    return MetricsIngested(trial_id=trial_id, rows=written)


@router.get(
    "/{trial_id}/metrics",
    response_model=list[MetricPublic],
    dependencies=[require_user],
    responses=USER_AUTH_RESPONSES,
)
async def get_metrics(
    trial_id: TrialId,
    database: DatabaseDep,
    kind: MetricKind | None = None,
    after_batches: Annotated[
        Cursor, Query(description="Only rows with more batches than this.")
    ] = None,
    limit: Annotated[int, Query(ge=1, le=100_000)] = 10_000,
) -> Any:
    """A trial's metric rows ordered by kind, then batches.

    Polled by dashboards while trials report, so it is cheap: one worker-thread hop holding
    one short read session; the JSON is built from the stored rows' own JSON text (the
    fields of :class:`MetricPublic`; no ORM objects, no second validation)."""

    def read() -> bytes:
        with database.session() as session:
            return metrics_repo.metrics_json(
                session, trial_id, kind=kind, after_batches=after_batches, limit=limit
            )

    return Response(await anyio.to_thread.run_sync(read), media_type="application/json")


@router.post("/{trial_id}/logs", responses=AUTH_RESPONSES)
def append_logs(
    trial_id: TrialId, auth: TrialAuth, body: LogsBatch, session: WriteSession
) -> LogsIngested:
    """Store log lines; lines whose ``seq`` is already stored are skipped (safe re-send).
    409 once the trial has ended."""
    trials_repo.get_live_trial(session, trial_id)
    lines = [
        LogLine(
            seq=line.seq,
            message=line.message,
            level=line.level,
            stream=line.stream,
            timestamp=line.timestamp,
        )
        for line in body.lines
    ]
    inserted = logs_repo.append_logs(session, trial_id, lines)
    return LogsIngested(trial_id=trial_id, received=len(lines), inserted=inserted)


MAX_LOG_LINES = 10_000
"""The most lines one ``GET /trials/{id}/logs`` returns (``limit``, ``head``, ``tail``)."""
MAX_RANK_IDS = 1_000
MAX_SEARCH_TEXT = 1_000
LogCount = Annotated[int | None, Query(ge=0, le=MAX_LOG_LINES)]


@router.get("/{trial_id}/logs", dependencies=[require_user], responses=USER_AUTH_RESPONSES)
def get_logs(
    trial_id: TrialId,
    session: ReadSession,
    offset: Offset = 0,
    limit: Annotated[int, Query(ge=1, le=MAX_LOG_LINES)] = 1000,
    after_seq: Annotated[Cursor, Query(description="Only lines with a larger seq.")] = None,
    after: Annotated[Cursor, Query(description="The same as `after_seq`.")] = None,
    rank: Annotated[
        int | None,
        Query(ge=0, le=1_000_000, description="Only the lines this worker (rank) wrote."),
    ] = None,
    rank_ids: Annotated[
        list[Annotated[int, Field(ge=0, le=1_000_000)]] | None,
        Query(description=f"Only the lines of these workers (ranks; at most {MAX_RANK_IDS})."),
    ] = None,
    level: Annotated[
        str | None,
        Query(
            max_length=16,
            description="Only lines of this level or above: "
            + ", ".join(logs_repo.LOG_LEVELS)
            + " (lines without a level count as INFO).",
        ),
    ] = None,
    timestamp_before: Annotated[
        datetime | None,
        Query(description="Only lines written before this time (RFC 3339 or epoch seconds)."),
    ] = None,
    timestamp_after: Annotated[
        datetime | None, Query(description="Only lines written after this time.")
    ] = None,
    search_text: Annotated[
        str | None,
        Query(
            min_length=1,
            max_length=MAX_SEARCH_TEXT,
            description="Only lines containing this text (case-sensitive).",
        ),
    ] = None,
    head: Annotated[LogCount, Query(description="Only the first N matching lines.")] = None,
    tail: Annotated[LogCount, Query(description="Only the last N matching lines.")] = None,
) -> list[LogLinePublic]:
    """A trial's log lines in ``seq`` order (``after``/``after_seq``: only the newer ones;
    ``rank``/``rank_ids``: only those of some workers of a multi-worker trial), filtered as
    ``det trial logs`` filters them: ``level`` and above, between ``timestamp_after`` and
    ``timestamp_before`` (lines without a timestamp pass), containing ``search_text``; then
    the first ``head`` or the last ``tail`` of them (at most 10,000; not both) instead of a
    ``limit``-line page. 422 naming the parameter for a bad value."""
    if head is not None and tail is not None:
        raise ApiError(422, "head and tail cannot both be given", field="tail")
    if rank_ids is not None and len(rank_ids) > MAX_RANK_IDS:
        raise ApiError(
            422, f"at most {MAX_RANK_IDS} rank_ids, got {len(rank_ids)}", field="rank_ids"
        )
    min_level = None
    if level is not None:
        min_level = level.upper()
        if min_level not in logs_repo.LOG_LEVELS:
            raise ApiError(
                422,
                f"level must be one of {', '.join(logs_repo.LOG_LEVELS)}, not {level!r}",
                field="level",
            )
    if search_text is not None and "\x00" in search_text:
        raise ApiError(422, "search_text must not contain NUL characters", field="search_text")
    trials_repo.get_trial(session, trial_id)
    if after_seq is None:
        after_seq = after
    where = logs_repo.LogFilter(
        rank_ids=tuple(rank_ids) if rank_ids is not None else None,
        min_level=min_level,
        timestamp_before=timestamp_before,
        timestamp_after=timestamp_after,
        search_text=search_text,
    )
    count = head if head is not None else tail if tail is not None else limit
    if count == 0:
        return []
    rows = logs_repo.list_logs(
        session,
        trial_id,
        offset=offset,
        limit=count,
        after_seq=after_seq,
        rank=rank,
        where=where,
        tail=tail is not None,
    )
    return [LogLinePublic.model_validate(row) for row in rows]


@router.get("/{trial_id}/workers", dependencies=[require_user], responses=USER_AUTH_RESPONSES)
async def get_trial_workers(
    trial_id: TrialId, database: DatabaseDep, request: Request
) -> list[TrialWorkerPublic]:
    """The worker processes of the trial's running attempt by rank (a multi-worker trial's N,
    a one-process trial's one), else those of its latest multi-worker attempt since the
    master started; [] when none. Served by the master itself (it knows its processes)."""

    def read() -> None:
        with database.session() as session:
            trials_repo.get_trial(session, trial_id)

    await anyio.to_thread.run_sync(read)
    return trial_workers(request, trial_id)


def trial_workers(request: Request, trial_id: int) -> list[TrialWorkerPublic]:
    """What the app's orchestrator knows of the trial's workers ([] without one)."""
    orchestrator = getattr(request.app.state, "orchestrator", None)
    if not isinstance(orchestrator, Orchestrator):
        return []
    return [
        TrialWorkerPublic(
            rank=w.rank,
            pid=w.pid,
            state=w.state,
            exit=None if w.exit_code is None else describe_status(w.exit_code),
            exit_code=w.exit_code,
            heartbeat_age=w.heartbeat_age,
        )
        for w in orchestrator.trial_workers(trial_id)
    ]


@router.post("/{trial_id}/checkpoints", status_code=201, responses=AUTH_RESPONSES)
def register_checkpoint(
    trial_id: TrialId,
    auth: TrialAuth,
    body: CheckpointCreate,
    session: WriteSession,
    request: Request,
) -> CheckpointPublic:
    """Register a checkpoint the trial stored (again: update its state/metadata/resources).

    409 if the uuid belongs to another trial or was registered at another batch count, if the
    trial has ended (``state``), or if it is past the batch count the searcher asked the
    trial to train to (``total_batches``).
    """
    trial = trials_repo.get_live_trial(session, trial_id)
    limit = _batch_limit(request, trial_id)
    if limit is not None and body.total_batches > limit:
        raise ApiError(
            409,
            f"a checkpoint at {body.total_batches} batches: trial {trial_id} was asked to "
            f"train to {limit} batches",
            field="total_batches",
        )
    checkpoint = checkpoints_repo.register_checkpoint(
        session,
        trial_id,
        uuid=str(body.uuid),
        total_batches=body.total_batches,
        metadata=body.metadata,
        resources=body.resources,
        state=body.state,
    )
    orchestrator = getattr(request.app.state, "orchestrator", None)
    if orchestrator is not None and checkpoint.state == CheckpointState.COMPLETED:
        orchestrator.checkpoint_completed(
            trial_id, checkpoint.uuid, checkpoint.total_batches, dict(checkpoint.metadata_)
        )
    return checkpoint_public(
        checkpoint,
        trial.experiment_id,
        metrics_repo.validation_metrics_at(session, trial_id, checkpoint.total_batches),
    )


def _batch_limit(request: Request, trial_id: int) -> int | None:
    """The batch count the searcher asked the trial to train to, as far as this app's metric
    writer knows (:meth:`~pedl.db.MetricIngestor.limit_batches`)."""
    ingestor = getattr(request.app.state, "metric_ingestor", None)
    return ingestor.batch_limit(trial_id) if isinstance(ingestor, MetricIngestor) else None


@router.get("/{trial_id}/checkpoints", dependencies=[require_user], responses=USER_AUTH_RESPONSES)
def list_trial_checkpoints(
    trial_id: TrialId,
    session: ReadSession,
    state: Annotated[list[CheckpointState] | None, Query(description="Keep these states.")] = None,
    limit: Limit = 100,
    offset: Offset = 0,
) -> Page[CheckpointPublic]:
    """The trial's checkpoints, oldest first."""
    trials_repo.get_trial(session, trial_id)
    rows, total = checkpoints_repo.list_checkpoints(
        session, trial_id=trial_id, states=state, limit=limit, offset=offset
    )
    items = [
        checkpoint_public(
            checkpoint,
            exp_id,
            metrics_repo.validation_metrics_at(session, trial_id, checkpoint.total_batches),
        )
        for checkpoint, exp_id in rows
    ]
    return Page[CheckpointPublic](items=items, total=total, offset=offset, limit=limit)
