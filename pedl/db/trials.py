"""Queries on trials: creation with a scoped token, state, restarts, best/latest checkpoint.

A trial's token is valid for one attempt only: the orchestrator issues a new one when it
starts a process for the trial (:func:`rotate_trial_token`) and revokes it when that process
exits, however it ended (:func:`revoke_trial_token`), and every token of a trial that reaches
a terminal state is revoked with the state change (:func:`set_trial_state`). A revoked token
is stored as :data:`REVOKED_TOKEN_PREFIX` plus the trial's id, which no token hashes to, so
every check of a trial token (:func:`trial_id_for_token`, the metric writer's comparison of
hashes) refuses it without knowing about revocation.
"""

from __future__ import annotations

import hashlib
import json
import math
import secrets
from collections.abc import Callable, Collection, Iterable, Sequence
from dataclasses import dataclass
from typing import Any, Literal, cast, get_args

from sqlalchemy import (
    JSON,
    Boolean,
    ColumnElement,
    CursorResult,
    Enum,
    Float,
    Numeric,
    Select,
    String,
    Table,
    Text,
    case,
    func,
    literal,
    or_,
    select,
    type_coerce,
    update,
)
from sqlalchemy import cast as sql_cast
from sqlalchemy.dialects import postgresql
from sqlalchemy.dialects.postgresql import ARRAY, JSONB
from sqlalchemy.orm import Session

from pedl.db._errors import ConflictError, NotFoundError
from pedl.db._models import Checkpoint, Experiment, Metric, Trial
from pedl.db._types import UTCDateTime, sqlite_stamp_iso, utc_iso, utcnow
from pedl.vocabulary import CheckpointState, MetricKind, TrialState, check_trial_transition

_trials = cast(Table, Trial.__table__)
_metrics = cast(Table, Metric.__table__)


def hash_token(token: str) -> str:
    """The stored form of a trial token (SHA-256, hex). Tokens are 256-bit random strings, so
    a plain hash is enough to make a leaked database useless for impersonation."""
    return hashlib.sha256(token.encode("utf-8")).hexdigest()


def _new_token() -> str:
    return secrets.token_urlsafe(32)


REVOKED_TOKEN_PREFIX = "revoked:"
"""The start of a revoked token's stored "hash": never a SHA-256 hex digest, so no token
matches it (and unique per trial, as the column requires)."""


def _revoked(trial_id: int) -> str:
    return f"{REVOKED_TOKEN_PREFIX}{int(trial_id)}"


def create_trial(
    session: Session,
    *,
    experiment_id: int,
    hparams: dict[str, Any],
    seed: int,
    request_id: str | None = None,
    state: TrialState = TrialState.ACTIVE,
) -> tuple[Trial, str]:
    """Insert a trial of ``experiment_id`` and return it with its raw bearer token.

    The token is returned only here (and by :func:`rotate_trial_token`); only its hash is
    stored. It authorises the trial's own writes (metrics, logs, checkpoints). Raises
    :class:`NotFoundError` when the experiment does not exist.
    """
    if session.get(Experiment, experiment_id) is None:
        raise NotFoundError("experiment", experiment_id)
    token = _new_token()
    trial = Trial(
        experiment_id=experiment_id,
        request_id=request_id,
        hparams=hparams,
        seed=seed,
        state=state,
        restarts=0,
        total_batches=0,
        token_hash=hash_token(token),
        created_at=utcnow(),
    )
    session.add(trial)
    session.flush()
    return trial, token


def rotate_trial_token(session: Session, trial_id: int) -> str:
    """Give a trial a new token (e.g. for a restarted process); the old one stops working."""
    trial = get_trial(session, trial_id)
    token = _new_token()
    trial.token_hash = hash_token(token)
    session.flush()
    return token


def revoke_trial_token(session: Session, trial_id: int, *, token_hash: str | None = None) -> bool:
    """Revoke the trial's token: no token is valid for it until :func:`rotate_trial_token`
    issues a new one. With ``token_hash`` (:func:`hash_token` of the token an attempt was
    given), only if the trial still has that token: the end of an old attempt never revokes
    a newer attempt's token. Returns whether a token was revoked (``False`` for an unknown
    trial, too)."""
    query = update(_trials).where(
        _trials.c.id == trial_id, _trials.c.token_hash != _revoked(trial_id)
    )
    if token_hash is not None:
        query = query.where(_trials.c.token_hash == token_hash)
    result = session.execute(query.values(token_hash=_revoked(trial_id)))
    return bool(cast(CursorResult[Any], result).rowcount)


def revoke_all_trial_tokens(session: Session) -> int:
    """Revoke the token of every trial (a starting orchestrator: none of its attempts runs
    yet, and a process left from before must not write); returns how many were revoked."""
    query = (
        update(_trials)
        .where(_trials.c.token_hash.not_like(f"{REVOKED_TOKEN_PREFIX}%"))
        .values(token_hash=literal(REVOKED_TOKEN_PREFIX) + sql_cast(_trials.c.id, String))
    )
    return int(cast(CursorResult[Any], session.execute(query)).rowcount)


def trial_id_for_token(session: Session, token: str) -> int | None:
    """The id of the trial that owns ``token``, ``None`` if no trial does."""
    return session.scalar(select(Trial.id).where(Trial.token_hash == hash_token(token)))


def get_trial(session: Session, trial_id: int, *, for_update: bool = False) -> Trial:
    """The trial with this id; raises :class:`NotFoundError`."""
    query = select(Trial).where(Trial.id == trial_id)
    if for_update:
        query = query.with_for_update()
    trial = session.scalars(query).one_or_none()
    if trial is None:
        raise NotFoundError("trial", trial_id)
    return trial


def get_live_trial(session: Session, trial_id: int) -> Trial:
    """The trial with this id, which has not ended: raises :class:`ConflictError`
    (``field="state"``) for a trial in a terminal state (it takes no more writes),
    :class:`NotFoundError` for an unknown id."""
    trial = get_trial(session, trial_id)
    if trial.state.is_terminal:
        raise ConflictError(
            f"trial {trial_id} has ended ({trial.state.value}): it takes no more writes",
            field="state",
        )
    return trial


def get_trial_by_request(session: Session, experiment_id: int, request_id: str) -> Trial | None:
    """The trial the searcher knows as ``request_id`` in this experiment, if it was created."""
    return session.scalars(
        select(Trial).where(Trial.experiment_id == experiment_id, Trial.request_id == request_id)
    ).one_or_none()


def list_trials(
    session: Session,
    experiment_id: int,
    *,
    states: Collection[TrialState] | None = None,
    limit: int = 100,
    offset: int = 0,
) -> tuple[list[Trial], int]:
    """One page of an experiment's trials in creation order, and the total count."""
    query, count = _trial_page(select(Trial), experiment_id, states, limit, offset)
    return list(session.scalars(query.order_by(Trial.id)).all()), session.scalar(count) or 0


_PUBLIC_COLUMNS = [column for column in _trials.c if column.name != "token_hash"]


TrialSort = Literal[
    "id",
    "state",
    "outcome",
    "total_batches",
    "best_validation",
    "restarts",
    "created_at",
    "ended_at",
    "duration",
]
"""The trial columns a list of trials can be sorted by; besides them, ``hparams.NAME`` and
``metrics.NAME`` (:data:`HPARAM_PREFIX`, :data:`METRIC_PREFIX`)."""
TRIAL_SORTS: tuple[str, ...] = get_args(TrialSort)

TrialRangeColumn = Literal["id", "total_batches", "best_validation", "restarts"]
"""The trial columns a list of trials can be filtered by a range of; besides them,
``hparams.NAME`` and ``metrics.NAME``."""
TRIAL_RANGE_COLUMNS: tuple[str, ...] = get_args(TrialRangeColumn)

HPARAM_PREFIX = "hparams."
"""``hparams.NAME``: a hyperparameter (nested ones by their dotted name, ``optimizer.lr``)."""
METRIC_PREFIX = "metrics."
"""``metrics.NAME``: the trial's latest validation value of a metric (the value in its
validation with the most batches that has a number for it), as Determined's trials table
shows a metric's latest (``last``) value."""


@dataclass(frozen=True)
class HparamColumn:
    """A hyperparameter as a column: its path in ``trials.hparams`` (``("optimizer", "lr")``)."""

    path: tuple[str, ...]


@dataclass(frozen=True)
class MetricColumn:
    """A validation metric as a column: the trial's latest value of ``name``."""

    name: str


TrialColumn = str | HparamColumn | MetricColumn
"""A column of the trials list: a plain column's name, a hyperparameter or a metric."""


@dataclass(frozen=True)
class TrialRange:
    """Keep the trials whose ``column`` is a number in ``[low, high]`` (``None``: open)."""

    column: TrialColumn
    low: float | None = None
    high: float | None = None


@dataclass(frozen=True)
class HparamValues:
    """Keep the trials whose hyperparameter at ``path`` is one of ``values`` (the text of a
    string or boolean ``true``/``false``, or a number equal to a value read as a number)."""

    path: tuple[str, ...]
    values: tuple[str, ...]


def hparam_paths(hyperparameters: object) -> dict[str, tuple[str, ...]]:
    """The hyperparameters an experiment config declares, by dotted name (``optimizer.lr``),
    with their path in a trial's ``hparams``: nested groups without a ``type`` are walked
    into; a bare value (a constant's short form) is one hyperparameter."""
    found: dict[str, tuple[str, ...]] = {}

    def walk(node: dict[str, Any], path: tuple[str, ...]) -> None:
        for key, spec in node.items():
            here = (*path, str(key))
            if isinstance(spec, dict) and "type" not in spec:
                walk(spec, here)
            else:
                found[".".join(here)] = here

    if isinstance(hyperparameters, dict):
        walk(hyperparameters, ())
    return found


def list_trial_documents(
    session: Session,
    experiment_id: int,
    *,
    states: Collection[TrialState] | None = None,
    sort: TrialColumn = "id",
    descending: bool = False,
    ranges: Sequence[TrialRange] = (),
    hparam_values: Sequence[HparamValues] = (),
    limit: int = 100,
    offset: int = 0,
) -> tuple[list[dict[str, Any]], int]:
    """:func:`list_trials` as JSON-ready documents, ``{column: value}`` for every column but
    the token hash: enums as their values, JSON columns decoded, timestamps as the text
    pydantic writes for them (:func:`~pedl.db._types.utc_iso`). No ORM objects and,
    on SQLite, no per-value type processing (several times cheaper for the API's polling
    readers). Each document also has ``latest_validation``: the metrics of the trial's
    validation with the most batches (``None`` before its first).

    Filtered by ``states``, ``ranges`` and ``hparam_values`` (all of them), sorted by
    ``sort`` (then id, the same way; trials without a value last; a hyperparameter's numbers
    before its strings and booleans, which sort by their text). Raises
    :class:`NotFoundError` for an unknown experiment."""
    if session.scalar(select(Experiment.id).where(Experiment.id == experiment_id)) is None:
        raise NotFoundError("experiment", experiment_id)
    dialect = session.get_bind().dialect.name
    sqlite = dialect == "sqlite"
    columns: list[Any] = []
    readers: list[Callable[[Any], Any] | None] = []
    for column in _PUBLIC_COLUMNS:
        if isinstance(column.type, JSON):
            columns.append(sql_cast(column, Text))
            readers.append(json.loads)
        elif isinstance(column.type, UTCDateTime):
            columns.append(type_coerce(column, String) if sqlite else column)
            readers.append(sqlite_stamp_iso if sqlite else utc_iso)
        elif isinstance(column.type, Enum):
            columns.append(type_coerce(column, String))  # the stored value
            readers.append(None)
        else:
            columns.append(column)
            readers.append(None)
    conditions = [
        *(_range_condition(r, dialect) for r in ranges),
        *(_values_condition(v, dialect) for v in hparam_values),
    ]
    query, count = _trial_page(
        select(*columns), experiment_id, states, limit, offset, conditions=conditions
    )
    keys = _sort_keys(sort, dialect)
    order = [(key.desc() if descending else key.asc()).nulls_last() for key in keys]
    if sort != "id":
        order.append(_trials.c.id.desc() if descending else _trials.c.id.asc())
    query = query.order_by(*order)
    names = [column.name for column in _PUBLIC_COLUMNS]
    fields = list(zip(names, readers, strict=True))
    documents = [
        {
            name: value if read is None or value is None else read(value)
            for (name, read), value in zip(fields, row, strict=True)
        }
        for row in session.execute(query)
    ]
    latest = latest_validations(session, [document["id"] for document in documents])
    for document in documents:
        document["latest_validation"] = latest.get(document["id"])
    return documents, session.scalar(count) or 0


LATEST_VALIDATIONS_CHUNK = 1000
"""Trial ids per query of :func:`latest_validations` (a database binds at most so many)."""


def latest_validations(session: Session, trial_ids: list[int]) -> dict[int, dict[str, Any]]:
    """The metrics of each of these trials' validation with the most batches, by trial id
    (trials that never validated are left out): one index lookup per trial, so it costs
    what the trials asked for, not what their experiment holds."""
    latest = (
        select(_metrics.c.id)
        .where(
            _metrics.c.trial_id == _trials.c.id,
            _metrics.c.kind == MetricKind.VALIDATION,
        )
        .order_by(_metrics.c.total_batches.desc())
        .limit(1)
        .correlate(_trials)
        .scalar_subquery()
    )
    found: dict[int, dict[str, Any]] = {}
    for start in range(0, len(trial_ids), LATEST_VALIDATIONS_CHUNK):
        chunk = trial_ids[start : start + LATEST_VALIDATIONS_CHUNK]
        row_ids = select(latest).where(_trials.c.id.in_(chunk))
        query = select(_metrics.c.trial_id, sql_cast(_metrics.c.metrics, Text)).where(
            _metrics.c.id.in_(row_ids)
        )
        found.update((row[0], json.loads(row[1])) for row in session.execute(query))
    return found


def _sort_keys(sort: TrialColumn, dialect: str) -> list[ColumnElement[Any]]:
    """What ``ORDER BY`` sorts by for ``sort`` (before the id)."""
    if isinstance(sort, HparamColumn):
        # Numbers first (numerically), then strings and booleans by their text.
        return [
            _json_number(_trials.c.hparams, sort.path, dialect),
            _json_text(_trials.c.hparams, sort.path, dialect),
        ]
    if isinstance(sort, MetricColumn):
        return [_latest_metric(sort.name, dialect)]
    if sort == "duration":
        return [_duration(_trials.c.created_at, _trials.c.ended_at, dialect)]
    return [_trials.c[sort]]


def _column_number(column: TrialColumn, dialect: str) -> ColumnElement[Any]:
    if isinstance(column, HparamColumn):
        return _json_number(_trials.c.hparams, column.path, dialect)
    if isinstance(column, MetricColumn):
        return _latest_metric(column.name, dialect)
    return _trials.c[column]


def _range_condition(bounds: TrialRange, dialect: str) -> ColumnElement[bool]:
    """``low <= value <= high`` with ``value`` written once, so that a metric's correlated
    subquery runs once per trial (``x >= a AND x <= b`` and PostgreSQL's ``BETWEEN`` run it
    twice): PostgreSQL tests it against a ``numrange``, SQLite's ``BETWEEN`` reads it once."""
    value = _column_number(bounds.column, dialect)
    low, high = bounds.low, bounds.high
    if low is None and high is None:
        return value.is_not(None)
    if dialect == "postgresql":
        allowed = func.numrange(
            sql_cast(literal(low, Float), Numeric), sql_cast(literal(high, Float), Numeric), "[]"
        )
        return allowed.op("@>", return_type=Boolean)(sql_cast(value, Numeric))
    if low is None:
        return value <= high
    if high is None:
        return value >= low
    return value.between(low, high)


def _values_condition(values: HparamValues, dialect: str) -> ColumnElement[bool]:
    text_value = _json_text(_trials.c.hparams, values.path, dialect)
    number = _json_number(_trials.c.hparams, values.path, dialect)
    numbers = [n for n in (_finite_number(v) for v in values.values) if n is not None]
    matches: list[ColumnElement[bool]] = [text_value.in_(list(values.values))]
    if numbers:
        matches.append(number.in_(numbers))
    return or_(*matches)


def _finite_number(text: str) -> float | None:
    try:
        number = float(text)
    except ValueError:
        return None
    return number if math.isfinite(number) else None


def _sqlite_path(path: tuple[str, ...]) -> str:
    return "$" + "".join(f'."{key}"' for key in path)


_POSTGRESQL = postgresql.dialect()


def _pg_typeof(column: ColumnElement[Any], where: ColumnElement[Any]) -> ColumnElement[Any]:
    """PostgreSQL's type name of the value at ``where`` (a path) in a JSON column: by
    ``jsonb_typeof`` in a ``jsonb`` column, by ``json_typeof`` in a ``json`` one (the metrics')."""
    if isinstance(column.type.dialect_impl(_POSTGRESQL), JSONB):
        return func.jsonb_typeof(column.op("#>", return_type=JSONB)(where))
    return func.json_typeof(column.op("#>", return_type=JSON)(where))


def _json_number(
    column: ColumnElement[Any], path: tuple[str, ...], dialect: str
) -> ColumnElement[Any]:
    """The number at ``path`` in a JSON column; ``NULL`` where it is missing or not a number
    (a string, a boolean, a non-finite value stored as text)."""
    if dialect == "postgresql":
        where = literal(list(path), ARRAY(Text))
        kind = _pg_typeof(column, where)
        return case((kind == "number", sql_cast(column.op("#>>", return_type=Text)(where), Float)))
    where_text = _sqlite_path(path)
    kind = func.json_type(column, where_text)
    return case((kind.in_(["integer", "real"]), func.json_extract(column, where_text)))


def _json_text(
    column: ColumnElement[Any], path: tuple[str, ...], dialect: str
) -> ColumnElement[Any]:
    """The text of a string or boolean (``true``, ``false``) at ``path`` in a JSON column;
    ``NULL`` for anything else."""
    if dialect == "postgresql":
        where = literal(list(path), ARRAY(Text))
        kind = _pg_typeof(column, where)
        return case((kind.in_(["string", "boolean"]), column.op("#>>", return_type=Text)(where)))
    where_text = _sqlite_path(path)
    kind = func.json_type(column, where_text)
    return case(
        (kind == "text", func.json_extract(column, where_text)),
        (kind == "true", literal("true")),
        (kind == "false", literal("false")),
    )


def _latest_metric(name: str, dialect: str) -> ColumnElement[Any]:
    """A trial's latest validation value of the metric ``name`` (a correlated subquery: one
    walk back through the trial's validations on the metrics' unique index)."""
    value = _json_number(_metrics.c.metrics, (name,), dialect)
    return (
        select(value)
        .where(
            _metrics.c.trial_id == _trials.c.id,
            _metrics.c.kind == MetricKind.VALIDATION,
            value.is_not(None),
        )
        .order_by(_metrics.c.total_batches.desc())
        .limit(1)
        .correlate(_trials)
        .scalar_subquery()
    )


def _duration(
    created: ColumnElement[Any], ended: ColumnElement[Any], dialect: str
) -> ColumnElement[Any]:
    """How long a row has lasted: its end (or now) minus its start; sortable on both
    databases (PostgreSQL: an interval; SQLite: days, from the stored text)."""
    now = literal(utcnow(), UTCDateTime())
    if dialect == "postgresql":
        return func.coalesce(ended, now) - created
    return func.julianday(func.coalesce(ended, now)) - func.julianday(created)


def _trial_page(
    query: Select[Any],
    experiment_id: int,
    states: Collection[TrialState] | None,
    limit: int,
    offset: int,
    *,
    conditions: Sequence[ColumnElement[bool]] = (),
) -> tuple[Select[Any], Select[int]]:
    """``query`` restricted to one page of the experiment's trials (unsorted: the caller
    orders it), and the count query."""
    where: list[ColumnElement[bool]] = [Trial.experiment_id == experiment_id, *conditions]
    if states:
        where.append(Trial.state.in_(list(states)))
    count = select(func.count()).select_from(Trial).where(*where)
    return query.where(*where).limit(limit).offset(offset), count


def trial_rows(session: Session, experiment_id: int) -> list[tuple[int, str, float | None, int]]:
    """``(id, state, best_validation, total_batches)`` of every trial of an experiment, by id
    (plain tuples, the state as its stored text: no ORM objects, no JSON). Raises
    :class:`NotFoundError` for an unknown experiment."""
    if session.scalar(select(Experiment.id).where(Experiment.id == experiment_id)) is None:
        raise NotFoundError("experiment", experiment_id)
    query = (
        select(
            _trials.c.id,
            type_coerce(_trials.c.state, String),
            _trials.c.best_validation,
            _trials.c.total_batches,
        )
        .where(_trials.c.experiment_id == experiment_id)
        .order_by(_trials.c.id)
    )
    # fetchall: one call for all rows (iterating fetches them one by one: ~3x the CPU)
    return [(row[0], row[1], row[2], row[3]) for row in session.execute(query).all()]


def series_candidates(
    session: Session,
    experiment_id: int,
    *,
    trained: bool,
    smaller_is_better: bool,
    best: int,
) -> tuple[list[int], list[int]]:
    """For learning curves: the ids of the experiment's ``best`` best trials by the searcher
    metric (best first, ties by id), and of every trial that has rows to draw, by id: those
    with a validated searcher metric, or (``trained``) with trained batches. Two queries
    answered from single columns (no row objects)."""
    value = _trials.c.best_validation
    ranked = (
        select(_trials.c.id)
        .where(_trials.c.experiment_id == experiment_id, value.is_not(None))
        .order_by(value.asc() if smaller_is_better else value.desc(), _trials.c.id)
        .limit(best)
    )
    has_rows = _trials.c.total_batches > 0 if trained else value.is_not(None)
    candidates = (
        select(_trials.c.id)
        .where(_trials.c.experiment_id == experiment_id, has_rows)
        .order_by(_trials.c.id)
    )
    return list(session.scalars(ranked).all()), list(session.scalars(candidates).all())


def ranked_trial_ids(
    session: Session,
    experiment_id: int,
    *,
    best_first: bool,
    smaller_is_better: bool,
    limit: int,
) -> list[int]:
    """The ids of the experiment's ``limit`` best (``best_first``) or worst trials by their
    searcher-metric value (trials without one left out; ties by id)."""
    value = _trials.c.best_validation
    ascending = smaller_is_better == best_first
    query = (
        select(_trials.c.id)
        .where(_trials.c.experiment_id == experiment_id, value.is_not(None))
        .order_by(value.asc() if ascending else value.desc(), _trials.c.id)
        .limit(limit)
    )
    return list(session.scalars(query).all())


def trial_hparams_after(
    session: Session, experiment_id: int, after_id: int = 0
) -> list[tuple[int, dict[str, Any]]]:
    """``(id, hparams)`` of the experiment's trials with an id above ``after_id``, by id (the
    documents read as text and decoded in one call: several times cheaper than one by one)."""
    query = (
        select(_trials.c.id, sql_cast(_trials.c.hparams, Text))
        .where(_trials.c.experiment_id == experiment_id, _trials.c.id > after_id)
        .order_by(_trials.c.id)
    )
    rows = session.execute(query).all()
    documents = json.loads("[" + ",".join(row[1] for row in rows) + "]")
    return [(row[0], document) for row, document in zip(rows, documents, strict=True)]


def trial_hparams(session: Session, trial_ids: Sequence[int]) -> dict[int, dict[str, Any]]:
    """The hyperparameters of these trials, by id (unknown ids are left out)."""
    if not trial_ids:
        return {}
    query = select(_trials.c.id, _trials.c.hparams).where(_trials.c.id.in_(list(trial_ids)))
    return {row[0]: row[1] for row in session.execute(query)}


def scheduled_trials(session: Session) -> list[tuple[int, int, TrialState, dict[str, Any]]]:
    """``(trial id, experiment id, state, experiment config)`` of every trial that is RUNNING
    or QUEUED, by trial id (what the cluster is doing, as recorded)."""
    query = (
        select(Trial.id, Trial.experiment_id, Trial.state, Experiment.config)
        .join(Experiment, Experiment.id == Trial.experiment_id)
        .where(Trial.state.in_([TrialState.RUNNING, TrialState.QUEUED]))
        .order_by(Trial.id)
    )
    return [(row[0], row[1], row[2], row[3]) for row in session.execute(query)]


def all_trials(session: Session, experiment_id: int) -> list[Trial]:
    """Every trial of an experiment, in creation order (for small experiments and local runs;
    the API pages with :func:`list_trials`)."""
    query = select(Trial).where(Trial.experiment_id == experiment_id).order_by(Trial.id)
    return list(session.scalars(query).all())


def set_trial_state(session: Session, trial_id: int, state: TrialState) -> Trial:
    """Move a trial to ``state``; on reaching a terminal state, stamps ``ended_at`` and
    revokes the trial's token (a finished trial takes no more writes). Raises
    ``IllegalTransitionError`` for a forbidden move, :class:`NotFoundError` for a bad id."""
    trial = get_trial(session, trial_id, for_update=True)
    check_trial_transition(trial.state, state, trial_id=trial_id)
    if state != trial.state and state.is_terminal:
        trial.ended_at = utcnow()
    if state.is_terminal:
        trial.token_hash = _revoked(trial_id)
    trial.state = state
    session.flush()
    return trial


def record_trial_restart(session: Session, trial_id: int) -> Trial:
    """Count one more restart of a trial's process (after a crash) and return the trial."""
    trial = get_trial(session, trial_id, for_update=True)
    trial.restarts += 1
    session.flush()
    return trial


def _as_number(value: object) -> float | None:
    if isinstance(value, bool) or not isinstance(value, int | float):
        return None
    number = float(value)
    return number if math.isfinite(number) else None


def _number(session: Session, name: str) -> ColumnElement[Any] | None:
    """A validation row's value of metric ``name`` where it is a number, else NULL, read in
    the database (as the stored double: no object decoded); None where the database cannot
    name the key (SQLite's JSON paths take no double quote or backslash), which
    :func:`_read_numbers` then reads from the objects. SQLite's ``json_type`` keeps booleans out
    (``json_extract`` reads ``true`` as 1), as PostgreSQL's ``json_typeof`` does."""
    value = Metric.metrics[name]
    if session.get_bind().dialect.name == "postgresql":
        return case((func.json_typeof(value) == "number", value.as_float()))
    if '"' in name or "\\" in name:
        return None
    path = f'$."{name}"'
    return case(
        (
            func.json_type(Metric.metrics, path).in_(("integer", "real")),
            func.json_extract(Metric.metrics, path),
        )
    )


def _read_numbers(
    session: Session, trial_id: int, name: str, batches: Collection[int] | None
) -> dict[int, float]:
    """The numeric, finite values of metric ``name`` in the trial's validation rows (those at
    ``batches``, or all), by batch count."""
    where = [Metric.trial_id == trial_id, Metric.kind == MetricKind.VALIDATION]
    if batches is not None:
        where.append(Metric.total_batches.in_(sorted(batches)))
    number = _number(session, name)
    pairs: Iterable[tuple[int, Any]]
    if number is None:
        rows = session.execute(select(Metric.total_batches, Metric.metrics).where(*where))
        pairs = ((b, values.get(name)) for b, values in rows)
    else:
        pairs = session.execute(select(Metric.total_batches, number).where(*where))
    return {b: n for b, value in pairs if (n := _as_number(value)) is not None}


def _best_number(session: Session, trial_id: int, name: str, smaller: bool) -> float | None:
    """The best numeric, finite value of metric ``name`` in the trial's validation rows: one
    aggregate in the database, which reads the values without decoding the rows."""
    number = _number(session, name)
    if number is None:
        values = _read_numbers(session, trial_id, name, None).values()
        return (min if smaller else max)(values, default=None)
    best = session.scalar(
        select((func.min if smaller else func.max)(number)).where(
            Metric.trial_id == trial_id, Metric.kind == MetricKind.VALIDATION
        )
    )
    return _as_number(best)


def refresh_trial_best(
    session: Session, trial_id: int, batches: Collection[int] | None = None
) -> None:
    """Recompute ``best_validation`` and ``best_checkpoint_uuid`` of a trial, and the
    ``searcher_metric`` of its checkpoints, from its stored validation metrics and
    checkpoints, using the experiment's searcher metric.

    The best checkpoint is the completed checkpoint taken at a batch count that has the best
    validation value (ties go to the later checkpoint). Non-numeric and non-finite values are
    ignored. Does nothing when the experiment names no searcher metric.

    ``batches``: the batch counts at which validation rows or checkpoints changed since the
    last refresh (what a report wrote, a registered checkpoint; empty where only checkpoints'
    states changed): only the checkpoints there get their searcher metric again, so a report
    costs the same late in a long trial as early (every checkpoint ever taken keeps its row).
    ``None`` sets every checkpoint's.
    """
    row = session.execute(
        select(Experiment.searcher_metric, Experiment.smaller_is_better)
        .join(Trial, Trial.experiment_id == Experiment.id)
        .where(Trial.id == trial_id)
    ).one_or_none()
    if row is None:
        raise NotFoundError("trial", trial_id)
    metric_name, smaller_is_better = row
    if metric_name is None:
        return
    trial = get_trial(session, trial_id)
    trial.best_validation = _best_number(session, trial_id, metric_name, smaller_is_better)
    if batches is None or batches:
        values = _read_numbers(session, trial_id, metric_name, batches)
        query = select(Checkpoint.id, Checkpoint.total_batches, Checkpoint.searcher_metric).where(
            Checkpoint.trial_id == trial_id
        )
        if batches is not None:
            query = query.where(Checkpoint.total_batches.in_(sorted(batches)))
        for checkpoint_id, at, stored in session.execute(query):
            value = values.get(at)
            if stored != value:
                changed = session.get(Checkpoint, checkpoint_id)
                if changed is not None:
                    changed.searcher_metric = value
        session.flush()
    metric = Checkpoint.searcher_metric
    trial.best_checkpoint_uuid = session.scalar(
        select(Checkpoint.uuid)
        .where(
            Checkpoint.trial_id == trial_id,
            Checkpoint.state == CheckpointState.COMPLETED,
            metric.is_not(None),
        )
        .order_by(
            metric.asc() if smaller_is_better else metric.desc(),
            Checkpoint.total_batches.desc(),
            Checkpoint.uuid,
        )
        .limit(1)
    )
    session.flush()


def count_by_state(session: Session, experiment_id: int) -> dict[TrialState, int]:
    """How many of the experiment's trials are in each state (states with none left out):
    one ``GROUP BY`` on the trials' index, cheap at any number of trials."""
    query = (
        select(_trials.c.state, func.count())
        .where(_trials.c.experiment_id == experiment_id)
        .group_by(_trials.c.state)
    )
    return {TrialState(state): int(count) for state, count in session.execute(query).all()}
