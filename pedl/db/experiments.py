"""Queries on experiments and their model definitions."""

from __future__ import annotations

import hashlib
from collections.abc import Collection, Sequence
from dataclasses import dataclass
from datetime import datetime
from typing import Any, Literal, get_args

from sqlalchemy import ColumnElement, delete, exists, func, literal, select
from sqlalchemy.orm import Session, undefer, undefer_group

from pedl.db._det_models import ArchivedExperiment
from pedl.db._errors import ConflictError, NotFoundError
from pedl.db._models import Checkpoint, Experiment, ModelDefinition, Trial
from pedl.db._registry_models import ModelVersion
from pedl.db._types import UTCDateTime, utcnow
from pedl.vocabulary import (
    CheckpointState,
    ExperimentAction,
    ExperimentState,
    check_experiment_transition,
    experiment_action_target,
)


def create_experiment(
    session: Session,
    *,
    config: dict[str, Any],
    config_text: str,
    model_definition: bytes,
    owner: str,
    activate: bool = True,
    name: str | None = None,
    description: str | None = None,
    labels: Sequence[str] = (),
    searcher_metric: str | None = None,
    smaller_is_better: bool = True,
    project_id: int | None = None,
) -> Experiment:
    """Insert an experiment (``ACTIVE``, or ``PAUSED`` when ``activate`` is false) with its
    model definition archive, in the project ``project_id`` (``None``: the default project,
    see :mod:`pedl.db.workspaces`); the returned row has its id."""
    experiment = Experiment(
        name=name,
        description=description,
        labels=list(labels),
        config=config,
        config_text=config_text,
        owner=owner,
        state=ExperimentState.ACTIVE if activate else ExperimentState.PAUSED,
        progress=0.0,
        searcher_metric=searcher_metric,
        smaller_is_better=smaller_is_better,
        created_at=utcnow(),
    )
    if project_id is not None:
        experiment.project_id = project_id
    experiment.model_definition = ModelDefinition(
        archive=model_definition,
        size=len(model_definition),
        sha256=hashlib.sha256(model_definition).hexdigest(),
    )
    session.add(experiment)
    session.flush()
    # The archive is written: let it go with the request (reloaded if read again). Held by
    # the experiment <-> model definition reference cycle, it would stay until the garbage
    # collector's next full collection, which an idle master may not run for hours.
    session.expire(experiment.model_definition, ["archive"])
    return experiment


def get_experiment(session: Session, experiment_id: int, *, for_update: bool = False) -> Experiment:
    """The experiment with this id; raises :class:`NotFoundError`. ``for_update`` locks the
    row until the transaction ends (PostgreSQL; SQLite write transactions are exclusive)."""
    query = select(Experiment).where(Experiment.id == experiment_id)
    if for_update:
        query = query.with_for_update()
    experiment = session.scalars(query).one_or_none()
    if experiment is None:
        raise NotFoundError("experiment", experiment_id)
    return experiment


ExperimentSort = Literal[
    "id",
    "name",
    "description",
    "owner",
    "state",
    "progress",
    "best_validation",
    "created_at",
    "ended_at",
    "labels",
    "duration",
]
"""The columns a list of experiments can be sorted by (``labels``: by the alphabetically
first label; ``duration``: the end, or now, minus the creation)."""
EXPERIMENT_SORTS: tuple[str, ...] = get_args(ExperimentSort)

ExperimentRangeColumn = Literal["id", "progress", "best_validation", "duration", "created_at"]
"""The columns a list of experiments can be filtered to a range of (``progress``: 0 to 1;
``duration``: seconds; ``created_at``: bounds are datetimes)."""
EXPERIMENT_RANGE_COLUMNS: tuple[str, ...] = get_args(ExperimentRangeColumn)


@dataclass(frozen=True)
class ExperimentRange:
    """Keep the experiments whose ``column`` is within ``[low, high]`` (``None``: open);
    numbers, or datetimes for ``created_at``."""

    column: ExperimentRangeColumn
    low: float | datetime | None = None
    high: float | datetime | None = None


def list_experiments(
    session: Session,
    *,
    states: Collection[ExperimentState] | None = None,
    name: str | None = None,
    description: str | None = None,
    owner: str | None = None,
    labels: Collection[str] = (),
    archived: bool | None = None,
    ranges: Collection[ExperimentRange] = (),
    project_id: int | None = None,
    workspace_id: int | None = None,
    sort: ExperimentSort = "id",
    descending: bool = True,
    limit: int = 100,
    offset: int = 0,
) -> tuple[list[Experiment], int]:
    """One page of experiments and the total count of those matching the filters: ``states``
    (any of them), ``name``, ``description`` and ``owner`` (case-insensitive substrings),
    ``labels`` (every one of them), ``archived`` (only archived ones, only others; ``None``:
    both), ``ranges`` (every one; an experiment without a value, such as a best metric before
    any validation, is outside every range of that column), ``project_id`` and
    ``workspace_id`` (only the experiments of that project, of that workspace's projects).

    Sorted by ``sort`` (ascending, or ``descending``), then by id the same way; experiments
    without a value (no name, no label, no validation yet, not ended) come last either way.
    """
    conditions: list[ColumnElement[bool]] = []
    if states:
        conditions.append(Experiment.state.in_(list(states)))
    for column, part in (
        (Experiment.name, name),
        (Experiment.description, description),
        (Experiment.owner, owner),
    ):
        if part:
            conditions.append(column.ilike(_substring_pattern(part), escape="\\"))
    for label in dict.fromkeys(labels):
        conditions.append(_has_label(session, label))
    if archived is not None:
        is_archived = exists().where(ArchivedExperiment.experiment_id == Experiment.id)
        conditions.append(is_archived if archived else ~is_archived)
    if project_id is not None:
        conditions.append(Experiment.project_id == project_id)
    if workspace_id is not None:
        conditions.append(Experiment.workspace_id == workspace_id)
    for bounds in ranges:
        value = _range_value(session, bounds.column)
        if bounds.low is not None:
            conditions.append(value >= bounds.low)
        if bounds.high is not None:
            conditions.append(value <= bounds.high)
    key = _sort_key(session, sort)
    order = key.desc() if descending else key.asc()
    tie = Experiment.id.desc() if descending else Experiment.id.asc()
    query = (
        select(Experiment)
        .options(undefer(Experiment.best_validation), undefer_group("project"))
        .where(*conditions)
        .order_by(order.nulls_last(), tie)
        .limit(limit)
        .offset(offset)
    )
    count = select(func.count()).select_from(Experiment).where(*conditions)
    return list(session.scalars(query).all()), session.scalar(count) or 0


def _substring_pattern(part: str) -> str:
    """A ``LIKE`` pattern (escape ``\\``) matching text that contains ``part`` literally."""
    return "%" + part.replace("\\", "\\\\").replace("%", "\\%").replace("_", "\\_") + "%"


def _sort_key(session: Session, sort: ExperimentSort) -> ColumnElement[Any]:
    """What ``ORDER BY`` sorts experiments by for ``sort``, on either database."""
    dialect = session.get_bind().dialect.name
    if sort == "labels":
        elements = _label_elements(dialect)
        return select(func.min(elements.c.value)).select_from(elements).scalar_subquery()
    if sort == "duration":
        return _duration_seconds(dialect)
    key: ColumnElement[Any] = getattr(Experiment, sort)
    return key


def _range_value(session: Session, column: ExperimentRangeColumn) -> ColumnElement[Any]:
    """What a range of ``column`` bounds, in its units (seconds for ``duration``)."""
    if column == "duration":
        return _duration_seconds(session.get_bind().dialect.name)
    value: ColumnElement[Any] = getattr(Experiment, column)
    return value


def _duration_seconds(dialect: str) -> ColumnElement[Any]:
    """An experiment's duration in seconds: its end, or now while it has none, minus its
    creation."""
    ended = func.coalesce(Experiment.ended_at, literal(utcnow(), UTCDateTime()))
    if dialect == "postgresql":
        return func.extract("epoch", ended - Experiment.created_at)
    return (func.julianday(ended) - func.julianday(Experiment.created_at)) * 86_400.0


def _label_elements(dialect: str) -> Any:
    """``experiments.labels`` as a table of one ``value`` column, correlated to the row."""
    if dialect == "postgresql":
        return func.jsonb_array_elements_text(Experiment.labels).table_valued("value")
    return func.json_each(Experiment.labels).table_valued("value")


def _has_label(session: Session, label: str) -> ColumnElement[bool]:
    """``experiments.labels`` (a JSON array of strings) holds ``label``."""
    elements = _label_elements(session.get_bind().dialect.name)
    return exists(select(literal(1)).select_from(elements).where(elements.c.value == label))


_UNCHANGED: Any = object()


def update_experiment(
    session: Session,
    experiment_id: int,
    *,
    name: str | None = _UNCHANGED,
    description: str | None = _UNCHANGED,
    labels: Sequence[str] = _UNCHANGED,
    notes: str | None = _UNCHANGED,
    log_retention_days: int | None = _UNCHANGED,
) -> Experiment:
    """Change what people wrote about an experiment (its name, its description, its labels:
    duplicates dropped, order kept; its notes) and how long its logs are kept; what is not
    given stays. Raises :class:`NotFoundError`."""
    experiment = get_experiment(session, experiment_id, for_update=True)
    if name is not _UNCHANGED:
        experiment.name = name
    if description is not _UNCHANGED:
        experiment.description = description
    if labels is not _UNCHANGED:
        experiment.labels = list(dict.fromkeys(labels))
    if notes is not _UNCHANGED:
        experiment.notes = notes
    if log_retention_days is not _UNCHANGED:
        experiment.log_retention_days = log_retention_days
    session.flush()
    return experiment


def get_model_definition(session: Session, experiment_id: int) -> ModelDefinition:
    """The model definition archive of an experiment; raises :class:`NotFoundError`."""
    definition = session.get(ModelDefinition, experiment_id)
    if definition is None:
        raise NotFoundError("experiment", experiment_id)
    return definition


def apply_experiment_action(
    session: Session, experiment_id: int, action: ExperimentAction
) -> Experiment:
    """Carry out a user's pause / activate / cancel / kill on the stored state.

    Raises :class:`NotFoundError`, or ``IllegalTransitionError`` (from ``pedl.engine``)
    when the action is not allowed in the current state. A no-op action changes nothing.
    """
    experiment = get_experiment(session, experiment_id, for_update=True)
    target = experiment_action_target(experiment.state, action, experiment_id=experiment_id)
    experiment.state = target
    session.flush()
    return experiment


def set_experiment_state(
    session: Session, experiment_id: int, state: ExperimentState
) -> Experiment:
    """Move an experiment to ``state`` (the scheduler's transitions); stamps ``ended_at`` on
    reaching a terminal state. Raises ``IllegalTransitionError`` for a forbidden move."""
    experiment = get_experiment(session, experiment_id, for_update=True)
    check_experiment_transition(experiment.state, state, experiment_id=experiment_id)
    if state != experiment.state and state.is_terminal:
        experiment.ended_at = utcnow()
    experiment.state = state
    session.flush()
    return experiment


def set_experiment_progress(session: Session, experiment_id: int, progress: float) -> None:
    """Record the searcher's progress estimate, clamped to [0, 1]."""
    experiment = get_experiment(session, experiment_id)
    experiment.progress = min(1.0, max(0.0, progress))


def set_archived(session: Session, experiment_id: int, archived: bool) -> Experiment:
    """Archive (only an ended experiment: :class:`ConflictError` otherwise) or unarchive
    the experiment; doing it twice is no error. Raises :class:`NotFoundError`."""
    experiment = get_experiment(session, experiment_id, for_update=True)
    row = session.get(ArchivedExperiment, experiment_id)
    if archived and row is None:
        if not experiment.state.is_terminal:
            raise ConflictError(
                f"cannot archive experiment {experiment_id}: it is {experiment.state.value}; "
                "only ended experiments can be archived"
            )
        session.add(ArchivedExperiment(experiment_id=experiment_id))
    elif not archived and row is not None:
        session.delete(row)
    session.flush()
    session.refresh(experiment)
    return experiment


def stored_checkpoint_uuids(session: Session, experiment_id: int) -> list[str]:
    """The uuids (storage ids) of the experiment's checkpoints whose files are not deleted
    and that no model version holds (those outlive the experiment)."""
    registered = select(ModelVersion.id).where(ModelVersion.checkpoint_uuid == Checkpoint.uuid)
    query = (
        select(Checkpoint.uuid)
        .join(Trial, Trial.id == Checkpoint.trial_id)
        .where(
            Trial.experiment_id == experiment_id,
            Checkpoint.state != CheckpointState.DELETED,
            ~exists(registered),
        )
        .order_by(Checkpoint.id)
    )
    return list(session.scalars(query))


def delete_experiment(session: Session, experiment_id: int) -> None:
    """Delete an ended experiment with everything under it (trials, metrics, checkpoint
    records, logs, searcher state). Raises :class:`ConflictError` while it is not terminal."""
    experiment = get_experiment(session, experiment_id, for_update=True)
    if not experiment.state.is_terminal:
        raise ConflictError(
            f"cannot delete experiment {experiment_id}: it is {experiment.state.value}; "
            "cancel or kill it first and wait until it has ended"
        )
    _detach_checkpoints(session, experiment)
    session.delete(experiment)
    session.flush()


def _detach_checkpoints(session: Session, experiment: Experiment) -> None:
    """Delete the experiment's checkpoint rows, except those model versions hold: these stay,
    with what is needed to find their files once the experiment is gone."""
    trial_ids = select(Trial.id).where(Trial.experiment_id == experiment.id)
    registered = select(ModelVersion.id).where(ModelVersion.checkpoint_uuid == Checkpoint.uuid)
    kept = list(
        session.scalars(
            select(Checkpoint).where(Checkpoint.trial_id.in_(trial_ids), exists(registered))
        )
    )
    storage = experiment.config.get("checkpoint_storage")
    for checkpoint in kept:
        checkpoint.detached = {
            "experiment_id": experiment.id,
            "trial_id": checkpoint.trial_id,
            "checkpoint_storage": storage,
        }
        checkpoint.trial_id = -checkpoint.trial_id  # never a live trial's id, even reused
    session.execute(
        delete(Checkpoint)
        .where(Checkpoint.trial_id.in_(trial_ids), ~exists(registered))
        .execution_options(synchronize_session=False)
    )
    session.flush()
