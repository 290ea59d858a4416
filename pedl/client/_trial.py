"""A trial: its record, logs, metrics and checkpoints."""

from __future__ import annotations

import time
from collections import deque
from collections.abc import Iterator, Mapping, Sequence
from dataclasses import dataclass
from datetime import UTC, datetime
from enum import StrEnum
from typing import Annotated, Any

from pydantic import BaseModel, BeforeValidator, ConfigDict

from pedl.client._checkpoint import Checkpoint, best_checkpoints, resolve_sort
from pedl.client._lineage import lineage_of
from pedl.client._ordering import CheckpointSortBy, OrderBy
from pedl.client._session import Session
from pedl.client._sorting import sort_checkpoints
from pedl.vocabulary import (
    TrialError,
    TrialOutcome,
    TrialState,
    decode_metric_value,
    outcome_note,
)

MAX_LOG_PAGE = 10_000
"""The most lines the master returns for one ``GET /trials/{id}/logs``."""

TERMINAL_TRIAL_STATES = frozenset(s for s in TrialState if s.is_terminal)
"""Trial states nothing ever leaves."""


def _metric_value(value: Any) -> Any:
    return decode_metric_value(value)


class LogLine(BaseModel):
    """One line of a trial's output; ``seq`` numbers the trial's lines across restarts."""

    model_config = ConfigDict(frozen=True, extra="ignore")

    seq: int
    message: str
    level: str | None = None
    stream: str | None = None
    timestamp: datetime | None = None
    rank: int | None = None
    """The worker of a multi-worker trial that wrote it (0: the chief); None for a
    one-process trial's lines and the master's."""


class TrialWorker(BaseModel):
    """One worker process of a trial's attempt, as the master sees it now."""

    model_config = ConfigDict(frozen=True, extra="ignore")

    rank: int
    """0: the chief."""
    pid: int
    state: str
    """``running``, ``exited`` (by itself) or ``killed`` (stopped by the master)."""
    exit: str | None = None
    """How it ended, once it did: ``exit code 1``, ``signal SIGKILL``."""
    exit_code: int | None = None
    heartbeat_age: float | None = None
    """Seconds since its last heartbeat (a multi-worker trial's running worker)."""


class MetricRow(BaseModel):
    """One training or validation report (``kind``) of a trial at ``total_batches``.

    Non-finite values come back as ``float`` NaN/inf (the API sends them as strings).
    """

    model_config = ConfigDict(frozen=True, extra="ignore")

    kind: str
    total_batches: int
    total_records: int | None = None
    total_epochs: float | None = None
    metrics: dict[str, Annotated[float | str | None, BeforeValidator(_metric_value)]]
    reported_at: datetime


MAX_SYSTEM_POINTS = 10_000
"""The most system metrics samples per worker one read returns."""


class SystemSample(BaseModel):
    """One sample of a trial process's system metrics: ``rank`` (the worker, 0: the chief),
    ``time`` (when it was taken) and ``metrics`` (``cpu_percent``, ``process_cpu_percent``,
    ``memory_percent``, ``process_rss_bytes``, ``disk_read_bytes_per_s``,
    ``disk_write_bytes_per_s``, ``net_sent_bytes_per_s``, ``net_recv_bytes_per_s``, and per
    GPU ``gpu<i>_util_percent`` and ``gpu<i>_memory_used_bytes``)."""

    model_config = ConfigDict(frozen=True, extra="ignore")

    rank: int
    time: datetime
    metrics: dict[str, float]


class _TrialFields(BaseModel):
    model_config = ConfigDict(extra="ignore")

    id: int
    experiment_id: int
    request_id: str | None = None
    hparams: dict[str, Any]
    seed: int
    state: TrialState
    restarts: int
    total_batches: int
    latest_checkpoint_uuid: str | None = None
    best_checkpoint_uuid: str | None = None
    best_validation: float | None = None
    outcome: TrialOutcome | None = None
    error: dict[str, Any] | None = None
    created_at: datetime
    ended_at: datetime | None = None


class Trial:
    """A trial as the master last described it (see :meth:`reload`).

    Attributes mirror the API's ``TrialPublic``: ``id``, ``experiment_id``, ``hparams``,
    ``seed``, ``state``, ``restarts``, ``total_batches``, ``latest_checkpoint_uuid``,
    ``best_checkpoint_uuid``, ``best_validation``, ``created_at``, ``ended_at``; ``outcome``
    (how its latest run ended: :class:`pedl.vocabulary.TrialOutcome`) and ``error`` (why it
    errored: :class:`pedl.vocabulary.TrialError`, with type, message, user-code location and
    traceback), both ``None`` until a run ends; ``parent_trial_id`` and ``lineage``
    (:class:`TrialLineage`: the trial it copies in a ``pbt`` search), ``None`` otherwise.
    """

    def __init__(self, session: Session, data: Mapping[str, Any]) -> None:
        self._session = session
        self._update(data)

    def _update(self, data: Mapping[str, Any]) -> None:
        fields = _TrialFields.model_validate(data)
        self._record = dict(data)
        self.id = fields.id
        self.experiment_id = fields.experiment_id
        self.request_id = fields.request_id
        self.hparams = fields.hparams
        self.seed = fields.seed
        self.state = fields.state
        self.restarts = fields.restarts
        self.total_batches = fields.total_batches
        self.latest_checkpoint_uuid = fields.latest_checkpoint_uuid
        self.best_checkpoint_uuid = fields.best_checkpoint_uuid
        self.best_validation = fields.best_validation
        self.outcome = fields.outcome
        self.error = TrialError.from_dict(fields.error) if fields.error else None
        self.created_at = fields.created_at
        self.ended_at = fields.ended_at
        self.lineage = lineage_of(data)
        """How this trial copies another in a ``pbt`` search (:class:`TrialLineage`), or
        ``None``."""
        self.parent_trial_id = self.lineage.parent_trial_id if self.lineage else None

    @property
    def outcome_note(self) -> str | None:
        """The outcome in words where the state alone hides it (``"invalid
        hyperparameters"``, ``"stopped by the searcher"``, ``"stopped early"``, ``"killed"``;
        for a live trial ``"errored, to be restarted"``, or ``"waiting for the searcher"``
        when it is ACTIVE and has trained: its process exited after its rung and the searcher
        has not decided yet), else ``None``: what the CLI and the web UI show beside the
        state."""
        return outcome_note(self.state, self.outcome, self.total_batches)

    def __repr__(self) -> str:
        state = self.state.value
        return f"Trial(id={self.id}, experiment_id={self.experiment_id}, state={state!r})"

    def to_dict(self) -> dict[str, Any]:
        """The API's JSON record as last fetched."""
        return dict(self._record)

    @property
    def is_terminal(self) -> bool:
        """True once the trial has ended (COMPLETED, CANCELED or ERROR)."""
        return self.state in TERMINAL_TRIAL_STATES

    def reload(self) -> Trial:
        """Fetch the trial's current record from the master; returns ``self``."""
        self._update(self._session.get(f"/trials/{self.id}"))
        return self

    def kill(self) -> None:
        """Stop this trial at once; the rest of its experiment goes on.

        Raises :class:`NotFoundError` for an unknown trial and :class:`PEDLError` (409) for
        one that already ended.
        """
        self._update(self._session.post(f"/trials/{self.id}/kill"))

    def logs(
        self,
        *,
        follow: bool = False,
        after_seq: int | None = None,
        interval: float = 1.0,
        page_size: int = 1000,
        rank: int | None = None,
    ) -> Iterator[LogLine]:
        """The trial's log lines in ``seq`` order, after ``after_seq`` when given; with
        ``rank``, only those of that worker of a multi-worker trial.

        With ``follow``, keep polling every ``interval`` seconds for new lines and stop once
        the trial has ended and every line has been read.
        """
        cursor = after_seq
        while True:
            ended = follow and self.reload().is_terminal
            while True:
                params: dict[str, Any] = {"limit": page_size}
                if cursor is not None:
                    params["after_seq"] = cursor
                if rank is not None:
                    params["rank"] = rank
                batch = [LogLine.model_validate(line) for line in self._get_logs(params)]
                yield from batch
                if batch:
                    cursor = batch[-1].seq
                if len(batch) < page_size:
                    break
            if not follow or ended:
                return
            time.sleep(interval)

    def iter_logs(
        self,
        follow: bool = False,
        *,
        head: int | None = None,
        tail: int | None = None,
        rank_ids: Sequence[int] | None = None,
        min_level: LogLevel | str | None = None,
        timestamp_before: str | int | float | datetime | None = None,
        timestamp_after: str | int | float | datetime | None = None,
        search_text: str | None = None,
        interval: float = 1.0,
    ) -> Iterator[str]:
        """The trial's log lines (their text) as Determined's ``Trial.iter_logs`` gives
        them: only the first ``head`` or the last ``tail`` lines, of the workers
        ``rank_ids``, at least ``min_level``, between ``timestamp_after`` and
        ``timestamp_before`` (RFC 3339 text or epoch seconds), containing ``search_text``.
        ``follow`` (not with ``head``/``tail``) waits for new lines until the trial ends."""
        for line in self.iter_log_lines(
            follow,
            head=head,
            tail=tail,
            rank_ids=rank_ids,
            min_level=min_level,
            timestamp_before=timestamp_before,
            timestamp_after=timestamp_after,
            search_text=search_text,
            interval=interval,
        ):
            yield line.message

    def iter_log_lines(
        self,
        follow: bool = False,
        *,
        head: int | None = None,
        tail: int | None = None,
        rank_ids: Sequence[int] | None = None,
        min_level: LogLevel | str | None = None,
        timestamp_before: str | int | float | datetime | None = None,
        timestamp_after: str | int | float | datetime | None = None,
        search_text: str | None = None,
        interval: float = 1.0,
    ) -> Iterator[LogLine]:
        """:meth:`iter_logs` as :class:`LogLine` records (with seq, level, timestamp). The
        master applies the filters (``GET /trials/{id}/logs``); only the lines asked for
        cross the network (a ``head`` or ``tail`` over 10,000 lines is read a page at a time
        and cut here)."""
        if follow and (head is not None or tail is not None):
            raise ValueError("follow cannot be combined with head or tail")
        if head is not None and tail is not None:
            raise ValueError("head and tail cannot both be given")
        params = log_filter_params(
            rank_ids=rank_ids,
            min_level=min_level,
            timestamp_before=timestamp_before,
            timestamp_after=timestamp_after,
            search_text=search_text,
        )
        if tail is not None and tail <= MAX_LOG_PAGE:
            yield from self._log_page({**params, "tail": tail}) if tail > 0 else ()
            return
        if head is not None and head <= MAX_LOG_PAGE:
            yield from self._log_page({**params, "head": head}) if head > 0 else ()
            return
        lines = self._filtered_logs(params, follow=follow, interval=interval)
        if tail is not None:
            yield from deque(lines, maxlen=tail)
            return
        for count, line in enumerate(lines):
            if head is not None and count >= head:
                return
            yield line

    def _log_page(self, params: Mapping[str, Any]) -> list[LogLine]:
        return [LogLine.model_validate(line) for line in self._get_logs(params)]

    def _filtered_logs(
        self, params: Mapping[str, Any], *, follow: bool, interval: float
    ) -> Iterator[LogLine]:
        """Every line passing the filter ``params``, in seq order, a page at a time."""
        cursor: int | None = None
        while True:
            ended = follow and self.reload().is_terminal
            while True:
                page: dict[str, Any] = {**params, "limit": MAX_LOG_PAGE}
                if cursor is not None:
                    page["after_seq"] = cursor
                batch = self._log_page(page)
                yield from batch
                if batch:
                    cursor = batch[-1].seq
                if len(batch) < MAX_LOG_PAGE:
                    break
            if not follow or ended:
                return
            time.sleep(interval)

    def iter_metrics(self, group: str) -> Iterator[TrialMetrics]:
        """The trial's reports of ``group`` (``"training"`` or ``"validation"``) in batch
        order, as Determined's ``Trial.iter_metrics`` gives them; fetched a page at a time.
        ``"system"``: its system metrics (:meth:`iter_system_metrics`), ``steps_completed``
        0, ``end_time`` when the sample was taken, ``metrics`` with ``rank`` added."""
        if group == "system":
            return (
                TrialMetrics(
                    trial_id=self.id,
                    trial_run_id=0,
                    steps_completed=0,
                    end_time=sample.time,
                    metrics={**sample.metrics, "rank": sample.rank},
                    group="system",
                )
                for sample in self.iter_system_metrics()
            )
        return iter_metrics_of(self._session, self.id, group)

    def iter_system_metrics(
        self, *, rank: int | None = None, max_points: int = MAX_SYSTEM_POINTS
    ) -> Iterator[SystemSample]:
        """The CPU, memory, disk, network and GPU use the trial's processes sampled
        (:class:`SystemSample`), by rank, then time; of worker ``rank`` only, when given. A
        worker with more than ``max_points`` samples (at most 10,000) gives that many, evenly
        spread over its samples."""
        body = self._session.get(
            f"/trials/{self.id}/system-metrics",
            params={"max_points": max_points, **({} if rank is None else {"rank": rank})},
        )
        return (SystemSample.model_validate(sample) for sample in body["samples"])

    def stream_training_metrics(self) -> Iterator[TrialMetrics]:
        """``iter_metrics("training")``."""
        return self.iter_metrics("training")

    def stream_validation_metrics(self) -> Iterator[TrialMetrics]:
        """``iter_metrics("validation")``."""
        return self.iter_metrics("validation")

    def select_checkpoint(
        self,
        latest: bool = False,
        best: bool = False,
        uuid: str | None = None,
        sort_by: str | None = None,
        smaller_is_better: bool | None = None,
    ) -> Checkpoint | None:
        """One checkpoint of the trial, as Determined's ``select_checkpoint`` picks it:
        exactly one of ``latest`` (the newest), ``best`` (by ``sort_by``, see
        :meth:`top_checkpoint`) or ``uuid``. ``None`` when the trial has no such
        checkpoint; ``ValueError`` unless exactly one is given."""
        if sum((bool(latest), bool(best), uuid is not None)) != 1:
            raise ValueError("exactly one of latest, best or uuid must be given")
        if best:
            return self.top_checkpoint(sort_by=sort_by, smaller_is_better=smaller_is_better)
        if latest:
            self.reload()
            uuid = self.latest_checkpoint_uuid
            if uuid is None:
                return None
        checkpoint = Checkpoint(self._session, self._session.get(f"/checkpoints/{uuid}"))
        if checkpoint.trial_id != self.id:
            raise ValueError(f"checkpoint {uuid} is not one of trial {self.id}'s")
        return checkpoint

    def workers(self) -> list[TrialWorker]:
        """The worker processes of the trial's running attempt, by rank (N for a trial of
        ``slots_per_trial: N``, one otherwise), else of its latest multi-worker attempt since
        the master started; [] when the master runs none."""
        rows = self._session.get(f"/trials/{self.id}/workers")
        assert isinstance(rows, list)
        return [TrialWorker.model_validate(row) for row in rows]

    def _get_logs(self, params: Mapping[str, Any]) -> list[Any]:
        lines = self._session.get(f"/trials/{self.id}/logs", params=params)
        assert isinstance(lines, list)
        return lines

    def metrics(self, kind: str | None = None, *, page_size: int = 10_000) -> list[MetricRow]:
        """The trial's metric rows of ``kind`` (``"training"`` or ``"validation"``; default
        both), ordered by kind, then batches."""
        kinds = [kind] if kind is not None else ["training", "validation"]
        rows: list[MetricRow] = []
        for one in kinds:
            cursor: int | None = None
            while True:
                params: dict[str, Any] = {"kind": one, "limit": page_size}
                if cursor is not None:
                    params["after_batches"] = cursor
                batch = self._session.get(f"/trials/{self.id}/metrics", params=params)
                rows.extend(MetricRow.model_validate(row) for row in batch)
                if len(batch) < page_size:
                    break
                cursor = rows[-1].total_batches
        return rows

    def list_checkpoints(
        self,
        sort_by: str | CheckpointSortBy | None = None,
        order_by: OrderBy | str | None = None,
        max_results: int | None = None,
        *,
        states: tuple[str, ...] = (),
    ) -> list[Checkpoint]:
        """The trial's checkpoints: with none of Determined's arguments, oldest first (only
        those in ``states`` when given); with them, as Determined's ``list_checkpoints``:
        by ``sort_by`` (a :class:`CheckpointSortBy` or a validation metric's name) in
        ``order_by``'s order, both or neither (then by the searcher's metric, best first), at
        most ``max_results``."""
        params = {"state": list(states)} if states else None
        items = self._session.get_all(f"/trials/{self.id}/checkpoints", params=params)
        checkpoints = [Checkpoint(self._session, item) for item in items]
        if sort_by is None and order_by is None and max_results is None:
            return checkpoints
        experiment = self._session.get(f"/experiments/{self.experiment_id}")
        return sort_checkpoints(checkpoints, sort_by, order_by, max_results, experiment)

    def top_checkpoint(
        self, *, sort_by: str | None = None, smaller_is_better: bool | None = None
    ) -> Checkpoint | None:
        """The trial's best completed checkpoint by validation metric ``sort_by``; ``None``
        when no checkpoint has a finite value of it.

        ``sort_by`` defaults to the experiment's searcher metric; ``smaller_is_better``
        defaults to the searcher's direction for that metric, and to true for any other.
        """
        metric, smaller = resolve_sort(
            self._session.get(f"/experiments/{self.experiment_id}"), sort_by, smaller_is_better
        )
        if metric is None:
            return None
        best = best_checkpoints(self.list_checkpoints(), metric, smaller, 1)
        return best[0] if best else None


class LogLevel(StrEnum):
    """A log line's level, as Determined names them (lines without one count as INFO)."""

    TRACE = "TRACE"
    DEBUG = "DEBUG"
    INFO = "INFO"
    WARNING = "WARNING"
    ERROR = "ERROR"
    CRITICAL = "CRITICAL"


def _as_time(value: str | int | float | datetime) -> str:
    """A timestamp as Determined's log filters take it (RFC 3339 text, epoch seconds or a
    datetime; naive ones are UTC), as RFC 3339 text for the master."""
    if isinstance(value, datetime):
        moment = value
    elif isinstance(value, (int, float)):
        moment = datetime.fromtimestamp(value, tz=UTC)
    else:
        moment = datetime.fromisoformat(value.replace("Z", "+00:00"))
    moment = moment if moment.tzinfo is not None else moment.replace(tzinfo=UTC)
    return moment.isoformat()


def log_filter_params(
    *,
    rank_ids: Sequence[int] | None = None,
    min_level: LogLevel | str | None = None,
    timestamp_before: str | int | float | datetime | None = None,
    timestamp_after: str | int | float | datetime | None = None,
    search_text: str | None = None,
) -> dict[str, Any]:
    """The query parameters of ``GET /trials/{id}/logs`` for Determined's log filters: the
    workers ``rank_ids``, at least ``min_level``, written before ``timestamp_before`` and
    after ``timestamp_after`` (lines without a timestamp pass), containing ``search_text``.
    ``ValueError`` for a level or timestamp that does not parse."""
    params: dict[str, Any] = {}
    if rank_ids:
        params["rank_ids"] = [int(rank) for rank in rank_ids]
    if min_level is not None:
        params["level"] = LogLevel(str(min_level).upper()).value
    if timestamp_before is not None:
        params["timestamp_before"] = _as_time(timestamp_before)
    if timestamp_after is not None:
        params["timestamp_after"] = _as_time(timestamp_after)
    if search_text is not None:
        params["search_text"] = search_text
    return params


@dataclass(frozen=True)
class TrialMetrics:
    """One metrics report of a trial, under Determined's names: ``steps_completed`` is the
    batches trained when it was reported, ``end_time`` when, ``group`` ``"training"`` or
    ``"validation"``. PEDL has one run per restart-free id, so ``trial_run_id`` is 0."""

    trial_id: int
    trial_run_id: int
    steps_completed: int
    end_time: datetime
    metrics: dict[str, Any]
    group: str
    batch_metrics: list[dict[str, Any]] | None = None


class TrainingMetrics(TrialMetrics):
    """A :class:`TrialMetrics` of group ``"training"``."""


class ValidationMetrics(TrialMetrics):
    """A :class:`TrialMetrics` of group ``"validation"``."""


_METRIC_CLASSES: dict[str, type[TrialMetrics]] = {
    "training": TrainingMetrics,
    "validation": ValidationMetrics,
}


def iter_metrics_of(
    session: Session, trial_id: int, group: str, *, page_size: int = 1000
) -> Iterator[TrialMetrics]:
    """A trial's reports of ``group`` in batch order, a page at a time."""
    if group not in _METRIC_CLASSES:
        raise ValueError(f"group must be 'training' or 'validation', not {group!r}")
    cls = _METRIC_CLASSES[group]
    cursor: int | None = None
    while True:
        params: dict[str, Any] = {"kind": group, "limit": page_size}
        if cursor is not None:
            params["after_batches"] = cursor
        batch = [
            MetricRow.model_validate(row)
            for row in session.get(f"/trials/{trial_id}/metrics", params=params)
        ]
        for row in batch:
            yield cls(
                trial_id=trial_id,
                trial_run_id=0,
                steps_completed=row.total_batches,
                end_time=row.reported_at,
                metrics=dict(row.metrics),
                group=group,
            )
        if len(batch) < page_size:
            return
        cursor = batch[-1].total_batches
