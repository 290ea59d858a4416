"""Request and response bodies of the REST API, named by role (``*Create``, ``*Public``, ...).

Conventions: timestamps are ISO 8601 in UTC; ids are integers except checkpoint uuids;
non-finite metric values travel as the strings ``"NaN"``, ``"Infinity"``, ``"-Infinity"``
(JSON has no literal for them); request bodies reject unknown fields.
"""

from __future__ import annotations

import math
from datetime import UTC, datetime
from typing import Annotated, Any, Generic, Literal, NotRequired, TypeVar
from uuid import UUID

from pydantic import (
    AfterValidator,
    BaseModel,
    BeforeValidator,
    ConfigDict,
    Field,
    TypeAdapter,
    WithJsonSchema,
    computed_field,
)
from typing_extensions import TypedDict

from pedl.config import mask_config
from pedl.db.metrics import MAX_METRIC_MAGNITUDE
from pedl.vocabulary import (
    MAX_ERROR_MESSAGE,
    MAX_TRACEBACK,
    NON_FINITE_NAMES,
    CheckpointState,
    ExperimentState,
    MetricKind,
    TrialOutcome,
    TrialState,
    decode_metric_value,
    waiting_for_searcher,
)

MAX_BIGINT = 2**63 - 1
MAX_BATCH_ROWS = 10_000

T = TypeVar("T")

BigCount = Annotated[int, Field(ge=0, le=MAX_BIGINT)]


def _no_nul(value: str) -> str:
    if "\x00" in value:
        raise ValueError("NUL characters are not allowed")
    return value


def _check_json_document(value: Any) -> Any:
    """Reject what no database can store in a JSON column: NUL characters, NaN/Infinity."""
    if isinstance(value, str):
        _no_nul(value)
    elif isinstance(value, float) and not math.isfinite(value):
        raise ValueError("NaN and Infinity are not allowed in JSON documents")
    elif isinstance(value, dict):
        for key, item in value.items():
            _no_nul(str(key))
            _check_json_document(item)
    elif isinstance(value, list):
        for item in value:
            _check_json_document(item)
    return value


def _to_utc(value: datetime) -> datetime:
    try:
        return value.replace(tzinfo=UTC) if value.tzinfo is None else value.astimezone(UTC)
    except OverflowError as err:
        raise ValueError("timestamp out of range") from err


SafeStr = Annotated[str, AfterValidator(_no_nul)]
JSONDocument = Annotated[dict[str, Any], AfterValidator(_check_json_document)]
ConfigSource = SafeStr | dict[str, Any]
"""An experiment config as submitted: YAML (or JSON) text without NUL, or a JSON object whose
values are not checked here: :func:`pedl.config.parse_config` refuses what no database stores
(a NUL, a NaN) naming the field (``config.name``), where a check of the whole document could
only name ``body.config``."""
UTCTimestamp = Annotated[datetime, AfterValidator(_to_utc)]


def _parse_metric_value(value: Any) -> Any:
    if isinstance(value, bool):
        return float(value)
    return decode_metric_value(value)


MetricValue = Annotated[float | None, BeforeValidator(_parse_metric_value)]
"""A number, ``null``, or one of the strings ``"NaN"``, ``"Infinity"``, ``"-Infinity"``."""
MetricName = Annotated[str, Field(min_length=1, max_length=256), AfterValidator(_no_nul)]


def _check_relpath(value: str) -> str:
    _no_nul(value)
    parts = value.split("/")
    if not value or value.startswith("/") or ".." in parts or "\\" in value:
        raise ValueError(f"{value!r} is not a relative path inside the checkpoint")
    return value


RelativePath = Annotated[str, Field(max_length=4096), AfterValidator(_check_relpath)]


class ResponseBody(BaseModel):
    """A body the API answers with. Its OpenAPI schema (serialization mode) marks every field
    required, the defaulted ones too: the API always writes them, so clients generated from the
    schema (the web UI's ``ui/src/api-types.ts``) type them as always there."""

    model_config = ConfigDict(json_schema_serialization_defaults_required=True)


ENCODED_METRIC_VALUE_SCHEMA: dict[str, Any] = {
    "anyOf": [
        {"type": "number"},
        {"type": "string", "enum": list(NON_FINITE_NAMES)},
        {"type": "null"},
    ]
}
EncodedMetricValue = Annotated[Any, WithJsonSchema(ENCODED_METRIC_VALUE_SCHEMA)]
"""A stored metric value as the API answers it: a number, ``null``, or one of the strings
:data:`~pedl.vocabulary.NON_FINITE_NAMES` (passed on as stored; only its schema says so)."""


class ErrorIssue(ResponseBody):
    """One problem with a request."""

    field: str | None = Field(description="Dotted path of the offending field, if any.")
    message: str
    line: int | None = Field(default=None, description="1-based YAML line, for config issues.")


class ErrorBody(ResponseBody):
    """What went wrong; ``issues`` lists every problem when there are several."""

    message: str
    field: str | None = None
    issues: list[ErrorIssue] = Field(default_factory=list)


class ErrorResponse(ResponseBody):
    """The body of every error response (4xx and 5xx)."""

    error: ErrorBody


class Page(ResponseBody, Generic[T]):
    """One page of a listing; ``total`` counts all matching items."""

    items: list[T]
    total: int
    offset: int
    limit: int


TemplateRef = Annotated[
    str, Field(min_length=1, max_length=255, pattern=r"^[A-Za-z0-9][A-Za-z0-9._-]*$")
]
"""The name of a template (``/templates/{name}``)."""


class ExperimentCreate(BaseModel):
    """Body of ``POST /experiments``."""

    model_config = ConfigDict(extra="forbid")

    config: ConfigSource = Field(
        description="The experiment config: YAML (or JSON) text, or a JSON object."
    )
    model_definition: str = Field(
        description="The model definition directory as a base64-encoded .tar.gz archive "
        "(within the limits of GET /limits; checked by the route, which knows them).",
        json_schema_extra={"contentEncoding": "base64", "contentMediaType": "application/gzip"},
    )
    activate: bool = Field(default=True, description="Start ACTIVE (true) or PAUSED (false).")
    template: TemplateRef | None = Field(
        default=None,
        description="A template (GET /templates) the master merges under the config before "
        "validating it, as Determined merges one (the config's own values win).",
    )
    project_id: int | None = Field(
        default=None,
        ge=1,
        le=2**31 - 1,
        description="The project to create it in (GET /projects); left out: the config's "
        "`workspace` and `project`, else the default project, Uncategorized.",
    )


class ExperimentPublic(ResponseBody):
    """An experiment as the API shows it."""

    model_config = ConfigDict(from_attributes=True)

    id: int
    name: str | None
    description: str | None = None
    labels: list[str] = Field(default_factory=list)
    owner: str
    state: ExperimentState
    progress: float = Field(description="How far the search is, 0 to 1 (from the searcher).")
    config: Annotated[dict[str, Any], AfterValidator(mask_config)] = Field(
        description="The experiment config (canonical form), its secrets masked as "
        "`********`: environment variables and checkpoint storage fields whose names look "
        "secret, passwords in URLs (the trials get the real values)."
    )
    searcher_metric: str | None
    smaller_is_better: bool
    best_validation: float | None = Field(
        default=None, description="The best searcher-metric value validated so far."
    )
    created_at: datetime
    ended_at: datetime | None
    error: str | None = Field(
        default=None, description="Why the experiment ended in ERROR, if it did."
    )
    archived: bool = Field(
        default=False, description="Archived: lists leave it out unless they ask for it."
    )
    notes: str | None = Field(default=None, description="Free-form notes (Determined's).")
    log_retention_days: int | None = Field(
        default=None,
        description="Days its trials' logs are kept after it ends (`det e set log-retention`); "
        "-1 or null: forever.",
    )
    project_id: int = Field(default=1, description="The project it belongs to (1: Uncategorized).")
    workspace_id: int = Field(default=1, description="The workspace of its project.")
    project_name: str = Field(default="Uncategorized", description="Its project's name.")
    workspace_name: str = Field(
        default="Uncategorized", description="The name of its project's workspace."
    )
    original_config: str | None = Field(
        default=None,
        description="The config as submitted (YAML or JSON text, Determined's "
        "`original_config`), its secrets masked as in `config`; only in "
        "GET /experiments/{id}.",
    )
    trial_counts: dict[TrialState, int] | None = Field(
        default=None,
        description="How many of its trials are in each state, read with the experiment "
        "(so its state and these counts agree); only in GET /experiments/{id}.",
    )


MAX_DESCRIPTION = 10_000
MAX_LABELS = 100
MAX_LABEL = 255

Label = Annotated[str, Field(min_length=1, max_length=MAX_LABEL), AfterValidator(_no_nul)]


class ExperimentPatch(BaseModel):
    """Body of ``PATCH /experiments/{id}``: what to change (a field left out stays)."""

    model_config = ConfigDict(extra="forbid")

    description: (
        Annotated[str, Field(max_length=MAX_DESCRIPTION), AfterValidator(_no_nul)] | None
    ) = Field(default=None, description="At most 10,000 characters; null clears it.")
    labels: list[Label] | None = Field(
        default=None,
        max_length=MAX_LABELS,
        description="At most 100 labels of 1 to 255 characters (duplicates are dropped).",
    )


class ExperimentCreated(ExperimentPublic):
    """The answer to creating an experiment: the experiment, and what to tell its submitter."""

    warnings: list[str] = Field(
        default_factory=list,
        description=(
            "Things about the config worth knowing that did not stop it: at most one, listing "
            "the Determined fields it sets that PEDL accepts and ignores."
        ),
    )


class TrialPublic(ResponseBody):
    """A trial as the API shows it (never its token)."""

    model_config = ConfigDict(from_attributes=True)

    id: int
    experiment_id: int
    request_id: str | None
    hparams: dict[str, Any]
    seed: int
    state: TrialState
    restarts: int
    total_batches: int
    latest_checkpoint_uuid: str | None
    best_checkpoint_uuid: str | None
    best_validation: float | None
    outcome: TrialOutcome | None = Field(
        default=None, description="How the trial's latest run ended (none while it runs)."
    )
    error: TrialErrorPublic | None = Field(
        default=None, description="The trial's latest error, if it errored."
    )
    created_at: datetime
    ended_at: datetime | None
    warm_start_checkpoint_uuid: str | None = Field(
        default=None,
        description="The checkpoint whose weights the trial started from (a warm start, or "
        "a population-based training copy's parent checkpoint), if any.",
    )
    parent_trial_id: int | None = Field(
        default=None,
        description="Lineage (pbt): the trial this one is a copy of, whose checkpoint "
        "warm_start_checkpoint_uuid it started from; none for a trial drawn afresh.",
    )
    parent_batches: int | None = Field(
        default=None, description="Lineage (pbt): the batch of the parent's checkpoint."
    )
    changed_hparams: dict[str, Any] | None = Field(
        default=None,
        description="Lineage (pbt): the hyperparameters that differ from the parent's, "
        'dotted names: {name: {"from": parent\'s, "to": this trial\'s}}.',
    )

    @computed_field(  # type: ignore[prop-decorator]
        description="ACTIVE after training: its process exited after the work the searcher "
        "gave it (an adaptive search's rung) and the searcher has not decided yet whether it "
        "trains further or stops; no process runs it (`ACTIVE (waiting for the searcher)` in "
        "the CLI, the SDK and the web UI)."
    )
    @property
    def waiting_for_searcher(self) -> bool:
        return waiting_for_searcher(self.state, self.outcome, self.total_batches)


class TrialListItem(TrialPublic):
    """A trial in the experiment's trials list: with its latest validation's metrics."""

    latest_validation: dict[str, EncodedMetricValue] | None = Field(
        default=None,
        description="The metrics of the trial's validation with the most batches (null "
        "before its first); non-finite values as the strings NaN, Infinity, -Infinity.",
    )


class MetricReport(BaseModel):
    """One row of a training or validation series.

    ``(trial, kind, total_batches)`` identifies it: sending it again replaces it.
    """

    model_config = ConfigDict(extra="forbid")

    kind: MetricKind
    total_batches: BigCount
    total_records: BigCount | None = None
    total_epochs: Annotated[float, Field(ge=0, allow_inf_nan=False)] | None = None
    metrics: dict[MetricName, MetricValue]
    reported_at: UTCTimestamp | None = Field(
        default=None, description="When the trial measured it; default: when received."
    )


class MetricsBatch(BaseModel):
    """Body of ``POST /trials/{id}/metrics``: up to 10,000 rows, stored in one statement."""

    model_config = ConfigDict(extra="forbid")

    rows: list[MetricReport] = Field(max_length=MAX_BATCH_ROWS)


_BoundedMetricValue = (
    Annotated[float, Field(ge=-MAX_METRIC_MAGNITUDE, le=MAX_METRIC_MAGNITUDE)]
    | None
    | Literal["NaN", "Infinity", "-Infinity"]
)


class _FastMetricReport(TypedDict):
    """:class:`MetricReport` for :data:`FAST_METRICS_BATCH` (see there)."""

    __pydantic_config__ = ConfigDict(extra="forbid")  # type: ignore[misc]

    kind: MetricKind
    total_batches: BigCount
    total_records: NotRequired[BigCount | None]
    total_epochs: NotRequired[Annotated[float, Field(ge=0, allow_inf_nan=False)] | None]
    metrics: dict[Annotated[str, Field(min_length=1, max_length=256)], _BoundedMetricValue]
    reported_at: NotRequired[UTCTimestamp | None]


class _FastMetricsBatch(TypedDict):
    __pydantic_config__ = ConfigDict(extra="forbid")  # type: ignore[misc]

    rows: Annotated[list[_FastMetricReport], Field(max_length=MAX_BATCH_ROWS)]


FAST_METRICS_BATCH: TypeAdapter[_FastMetricsBatch] = TypeAdapter(_FastMetricsBatch)
"""The common case of :class:`MetricsBatch`, validated by pydantic's core alone (no Python
call per row, name or value; rows as dicts, not models), for the metric-report fast path
(``pedl.master.api._app.MetricReportFastPath``). It accepts a subset of what
:class:`MetricsBatch` accepts, with the same values, and also checks the values' bound
(:data:`~pedl.db.metrics.MAX_METRIC_MAGNITUDE`, which :class:`MetricsBatch` leaves to the
database layer's 422); anything else fails here and takes the route, whose errors name the
field. The differences: a metric name is not checked for NUL characters (the caller sends a
body holding ``\\u0000`` to the route instead), and a non-finite value arrives as the string
that spells it (``"NaN"``, ``"Infinity"``, ``"-Infinity"``, which is how it is stored), not as
a float; a non-finite value spelled otherwise (``"nan"``, a number past the double's range)
and one beyond the bound fail here."""


class MetricsIngested(ResponseBody):
    """How many distinct ``(kind, total_batches)`` rows were written."""

    trial_id: int
    rows: int


class MetricPublic(ResponseBody):
    """A stored metric row."""

    model_config = ConfigDict(from_attributes=True)

    trial_id: int
    kind: MetricKind
    total_batches: int
    total_records: int | None
    total_epochs: float | None
    metrics: dict[str, Annotated[float | str | None, WithJsonSchema(ENCODED_METRIC_VALUE_SCHEMA)]]
    reported_at: datetime


def _replace_nul(value: str) -> str:
    return value.replace("\x00", "\ufffd")


class LogLineCreate(BaseModel):
    """One line of trial output; ``seq`` numbers the trial's lines (across its restarts)."""

    model_config = ConfigDict(extra="forbid")

    seq: BigCount
    message: Annotated[str, Field(max_length=1_048_576), AfterValidator(_replace_nul)]
    level: Annotated[str, Field(max_length=16), AfterValidator(_no_nul)] | None = None
    stream: Annotated[str, Field(max_length=16), AfterValidator(_no_nul)] | None = None
    timestamp: UTCTimestamp | None = None


class LogsBatch(BaseModel):
    """Body of ``POST /trials/{id}/logs``: lines already stored (same seq) are skipped."""

    model_config = ConfigDict(extra="forbid")

    lines: list[LogLineCreate] = Field(max_length=MAX_BATCH_ROWS)


class LogsIngested(ResponseBody):
    """``received`` lines in the request, ``inserted`` of them new."""

    trial_id: int
    received: int
    inserted: int


class LogLinePublic(ResponseBody):
    """A stored log line."""

    model_config = ConfigDict(from_attributes=True)

    seq: int
    message: str
    level: str | None
    stream: str | None
    timestamp: datetime | None
    rank: int | None = Field(
        default=None,
        description="The worker of a multi-worker trial that wrote the line (0: the chief); "
        "null for a one-process trial's lines and the master's.",
    )


class CheckpointCreate(BaseModel):
    """Body of ``POST /trials/{id}/checkpoints`` (re-sending updates state/metadata)."""

    model_config = ConfigDict(extra="forbid")

    uuid: UUID
    total_batches: BigCount
    metadata: JSONDocument = Field(default_factory=dict)
    resources: dict[RelativePath, BigCount] = Field(
        default_factory=dict, description="Every file of the checkpoint: {relative path: bytes}."
    )
    state: CheckpointState = CheckpointState.COMPLETED


class CheckpointPublic(ResponseBody):
    """A checkpoint as the API shows it, with the validation metrics at its batch, if any."""

    uuid: str
    trial_id: int
    experiment_id: int
    total_batches: int
    state: CheckpointState
    metadata: dict[str, Any]
    resources: dict[str, int]
    size: int = Field(description="Total bytes of all resources.")
    created_at: datetime
    validation_metrics: dict[str, EncodedMetricValue] | None = None


class Health(ResponseBody):
    """Body of ``GET /health``."""

    status: str


class ModelDefinitionLimits(ResponseBody):
    """The limits a model definition archive must keep (the master's
    ``max_model_definition_*`` settings)."""

    max_bytes: int = Field(description="Largest archive (gzip-compressed tar), in bytes.")
    max_unpacked_bytes: int = Field(description="Largest total size of its files, in bytes.")
    max_members: int = Field(description="Most files and directories in it.")


class RequestLimitsPublic(ResponseBody):
    """The limits a client can check before sending a request."""

    model_definition: ModelDefinitionLimits
    max_upload_bytes: int = Field(description="Largest body of POST /experiments, in bytes.")
    max_request_bytes: int = Field(description="Largest body of every other request, in bytes.")


class MasterPublic(ResponseBody):
    """Body of ``GET /master``: this master's version and the limits it enforces."""

    version: str
    limits: RequestLimitsPublic


class TrialStartInfo(ResponseBody):
    """Body of ``GET /trials/{id}/start``: what a trial process needs to begin (or resume)."""

    trial_id: int
    experiment_id: int
    request_id: str | None
    hparams: dict[str, Any]
    seed: int
    latest_checkpoint: str | None = Field(description="Storage id to resume from, if any.")
    warm_start_checkpoint: str | None = Field(
        default=None,
        description="Storage id whose weights a trial without a checkpoint starts from.",
    )
    config: dict[str, Any] = Field(description="The experiment config (canonical form).")


class SearcherOperationPublic(ResponseBody):
    """Body of ``GET /trials/{id}/searcher/operation``.

    ``train``: train to the absolute ``length`` (in the searcher's unit), validate, and post
    ``searcher/completed``; ``closed``: the searcher has no more work for this trial;
    ``wait``: none yet, ask again.
    """

    status: Literal["train", "closed", "wait"]
    length: int | None = None


class SearcherCompleted(BaseModel):
    """Body of ``POST /trials/{id}/searcher/completed``."""

    model_config = ConfigDict(extra="forbid")

    length: BigCount
    metric: MetricValue = Field(description="The searcher metric at that length.")


class TrialErrorPublic(ResponseBody):
    """Why a trial errored: the error's type and message, the innermost frame of the user's
    code (``file.py:LINE``), and whether it came before training progressed (then the trial
    is not restarted: it would fail the same way)."""

    model_config = ConfigDict(extra="forbid")

    type: Annotated[str, Field(min_length=1, max_length=256), AfterValidator(_no_nul)]
    message: Annotated[str, Field(max_length=MAX_ERROR_MESSAGE), AfterValidator(_no_nul)]
    location: Annotated[str, Field(max_length=1024), AfterValidator(_no_nul)] | None = None
    before_progress: bool = False
    traceback: Annotated[str, Field(max_length=MAX_TRACEBACK), AfterValidator(_no_nul)] = ""
    batches: BigCount | None = Field(
        default=None,
        description="The batches the trial had trained when the error was raised (null: not "
        "known). The same error at the same batch after a restart ends the trial: it resumed "
        "exactly, so every restart would fail the same way.",
    )
    recurred: bool = Field(
        default=False,
        description="The trial ended because this error repeated the one before its restart "
        "(same type, message, line and batch), without spending its other restarts.",
    )


class TrialExit(BaseModel):
    """Body of ``POST /trials/{id}/exit``: how the process's run ended, sent just before it
    exits (acted upon when the process has exited)."""

    model_config = ConfigDict(extra="forbid")

    outcome: TrialOutcome
    error: TrialErrorPublic | None = None


class PreemptPublic(ResponseBody):
    """Body of ``GET /trials/{id}/preempt``: whether to checkpoint and exit now."""

    preempt: bool


class TrialSchedulingPublic(ResponseBody):
    """Body of ``GET /trials/{id}/scheduling``: the trial's state and why it waits, if so."""

    trial_id: int
    state: TrialState
    queue_reason: str | None


class TrialSeriesPublic(ResponseBody):
    """One trial's line of a learning-curve chart: ``[x, y]`` points in x order."""

    trial_id: int
    best: bool = Field(description="The best trial by the searcher metric (one trial only).")
    points: list[tuple[float, float]]


class SeriesPublic(ResponseBody):
    """Body of ``GET /experiments/{id}/series``: downsampled learning curves."""

    kind: MetricKind
    metric: str
    x: Literal["batches", "epochs"]
    cursor: int = Field(description="The largest metric row id read; pass it as `after`.")
    select: Literal["default", "best", "worst", "all", "ids"] = Field(
        description="How the trials drawn were chosen (the request's `select`)."
    )
    total_trials: int = Field(
        description="How many trials have rows of the kind to draw (those drawn are a subset "
        "unless `select=all`)."
    )
    trials: list[TrialSeriesPublic]


class HparamImportancePublic(ResponseBody):
    """One hyperparameter's share of the importance for the searcher metric."""

    name: str = Field(description="Nested names joined with dots.")
    importance: float = Field(description="From 0 to 1; the shares sum to 1 (or are all 0).")


class ImportancePublic(ResponseBody):
    """Body of ``GET /experiments/{id}/importance``."""

    metric: str | None = Field(description="The searcher metric.")
    method: str
    ready: bool = Field(description="False until the first is computed: ask again.")
    current: bool = Field(description="Whether it is of the trials' values now.")
    trials: int = Field(description="The trials with a searcher-metric value it used.")
    importances: list[HparamImportancePublic] = Field(
        description="Every hyperparameter that varies, most important first."
    )


class HistoryPublic(ResponseBody):
    """Body of ``GET /experiments/{id}/history``: the optimization history, as columns, one
    entry per trial with a searcher-metric value, in the order they ended."""

    metric: str | None
    smaller_is_better: bool
    started_at: datetime = Field(description="The experiment's creation; times count from it.")
    trial_ids: list[int]
    times: list[float] = Field(
        description="Seconds from `started_at` to the trial's end (now while it runs)."
    )
    ended: list[bool] = Field(description="False while the trial runs (its value may change).")
    values: list[float] = Field(description="The trial's best searcher-metric value.")
    best_so_far: list[float] = Field(description="The best value of this and earlier entries.")


class TimelinePublic(ResponseBody):
    """Body of ``GET /experiments/{id}/timeline``: when each attempt of each trial ran and on
    which slots, as columns, by trial id then start."""

    started_at: datetime = Field(description="The experiment's creation; times count from it.")
    now: float = Field(description="Seconds from `started_at` to the answer.")
    slots: int = Field(description="How many slots the attempts are drawn on.")
    slots_per_trial: int
    trial_ids: list[int]
    states: list[TrialState] = Field(description="The trial's state now.")
    starts: list[float] = Field(description="Seconds from `started_at`.")
    ends: list[float | None] = Field(description="Seconds from `started_at`; null: running.")
    slot: list[int] = Field(
        description="The first of the attempt's slots (numbered from 0 in start order: the "
        "master counts slots, it does not name them)."
    )


class TrialsSummaryPublic(ResponseBody):
    """Body of ``GET /experiments/{id}/trials/summary``: every trial, as columns."""

    trial_ids: list[int]
    states: list[TrialState]
    best_validation: list[float | None]
    hparams: dict[str, list[Any]] = Field(
        description="One column per hyperparameter, nested names joined with dots; null where "
        "a trial has none."
    )


class MetricNamesPublic(ResponseBody):
    """Body of ``GET /experiments/{id}/metric-names``."""

    training: list[str]
    validation: list[str]


class TrialWorkerPublic(ResponseBody):
    """One worker process of a trial's attempt (``GET /trials/{id}/workers``)."""

    rank: int = Field(description="0: the chief.")
    pid: int
    state: str = Field(description="running, exited (by itself) or killed (by the master).")
    exit: str | None = Field(
        default=None, description='How it ended, once it did: "exit code 1", "signal SIGKILL".'
    )
    exit_code: int | None = Field(default=None, description="Negative: the signal's number.")
    heartbeat_age: float | None = Field(
        default=None,
        description="Seconds since its last heartbeat (multi-worker trials; before the "
        "first, since it started); null once it ended or for a one-process trial.",
    )


class RunningTrialPublic(ResponseBody):
    """A trial whose process runs, and the slots it holds."""

    trial_id: int
    experiment_id: int
    slots: int
    workers: list[TrialWorkerPublic] = Field(
        default_factory=list,
        description="Its worker processes (one per slot for a multi-worker trial).",
    )


class QueuedTrialPublic(ResponseBody):
    """A trial waiting for slots, and why."""

    trial_id: int
    experiment_id: int
    reason: str | None


class WorkerExitPublic(ResponseBody):
    """A warm or spare worker process (kept ready for trials) that exited by itself while it
    ran no trial."""

    pid: int
    exit: str = Field(description='How it ended: "exit code 1", "signal SIGKILL".')
    spare: bool = Field(description="It had run no trial yet (a spare worker).")
    experiment_id: int | None = Field(description="The experiment whose trials it ran, if any.")
    trial_id: int | None = Field(description="The trial it ran last, if any.")
    at: datetime = Field(description="When the master noticed it (within seconds).")


class IdleWorkerPublic(ResponseBody):
    """A worker process kept ready for trials, idle now: it holds a slot until a trial takes
    it (or, but for a spare, it is retired after the master's ``worker_idle_seconds``)."""

    pid: int
    spare: bool = Field(
        description="It has run no trial yet (a spare worker): the first trial of an "
        "experiment without environment variables starts in it."
    )
    experiment_id: int | None = Field(
        description="The experiment whose next trial it runs (null for a spare)."
    )
    trial_id: int | None = Field(description="The trial it ran last, if any.")
    idle_since: datetime


class ClusterPublic(ResponseBody):
    """Body of ``GET /cluster``: the slots and what uses or waits for them."""

    slots_total: int
    slots_used: int
    running: list[RunningTrialPublic]
    queued: list[QueuedTrialPublic]
    halted: str | None = Field(
        default=None,
        description="Why the master starts no trial now (its own disk is full: "
        "min_free_disk_bytes; its resource manager is unavailable; its agent is disabled: "
        "`det agent enable`), or null.",
    )
    worker_exits: list[WorkerExitPublic] = Field(
        default_factory=list,
        description="The latest warm and spare workers that exited by themselves while idle "
        "(at most 20, oldest first; since the master started).",
    )
    idle_workers: list[IdleWorkerPublic] = Field(
        default_factory=list,
        description="The warm and spare workers idle now, longest idle first: each holds a "
        "slot, and gives it up to a trial that needs a new process.",
    )


MAX_SYSTEM_SAMPLES = 1000
"""Samples per ``POST /trials/{id}/system-metrics`` (a trial sends 6 at a time)."""
MAX_SYSTEM_METRICS = 64
"""Values per sample (8 of the machine and the process, 2 per GPU)."""
MAX_RANK = 65_535
SystemMetricName = Annotated[str, Field(min_length=1, max_length=64, pattern=r"^[A-Za-z0-9_.\-]+$")]


class SystemSampleCreate(BaseModel):
    """One sample of a worker's system metrics: when it was taken and its values (finite
    numbers within ±1e300)."""

    model_config = ConfigDict(extra="forbid")

    time: UTCTimestamp
    metrics: dict[
        SystemMetricName, Annotated[float, Field(ge=-1e300, le=1e300, allow_inf_nan=False)]
    ] = Field(max_length=MAX_SYSTEM_METRICS)


class SystemMetricsBatch(BaseModel):
    """Body of ``POST /trials/{id}/system-metrics``: a batch of one worker's samples. A
    sample already stored (same rank and time) is skipped, so re-sending is safe."""

    model_config = ConfigDict(extra="forbid")

    rank: int = Field(default=0, ge=0, le=MAX_RANK, description="The worker (0: the chief).")
    samples: list[SystemSampleCreate] = Field(min_length=1, max_length=MAX_SYSTEM_SAMPLES)


class SystemMetricsIngested(ResponseBody):
    """``received`` samples in the request, ``inserted`` of them new."""

    trial_id: int
    received: int
    inserted: int


class SystemSamplePublic(ResponseBody):
    """One stored sample."""

    rank: int
    time: datetime
    metrics: dict[str, float]


class SystemMetricsPublic(ResponseBody):
    """A trial's system metrics: ``samples`` ordered by rank, then time; at most
    ``max_points`` per worker, evenly spread over its samples when it took more
    (``downsampled``); ``total`` samples stored."""

    trial_id: int
    total: int
    downsampled: bool
    samples: list[SystemSamplePublic]
