"""The ORM models: one table per stored concept.

Every timestamp is UTC (:class:`UTCDateTime`); every free-form document (config, hparams,
metrics, metadata) is a JSON column. Child rows are deleted with their parent
(``ON DELETE CASCADE``). The migrations in ``migrations/versions`` create exactly this schema
(a test compares them).
"""

from __future__ import annotations

from collections.abc import Callable
from datetime import datetime
from typing import TYPE_CHECKING, Any

from sqlalchemy import (
    BigInteger,
    Boolean,
    Enum,
    Float,
    ForeignKey,
    ForeignKeyConstraint,
    Index,
    Integer,
    LargeBinary,
    MetaData,
    String,
    Text,
    UniqueConstraint,
    case,
    func,
    select,
)
from sqlalchemy.orm import (
    DeclarativeBase,
    Mapped,
    column_property,
    mapped_column,
    relationship,
)

from pedl.db._types import BigIntPK, JSONType, OrderedJSONType, UTCDateTime, utcnow
from pedl.vocabulary import CheckpointState, ExperimentState, MetricKind, TrialOutcome, TrialState

NAMING_CONVENTION = {
    "ix": "ix_%(column_0_label)s",
    "uq": "uq_%(table_name)s_%(column_0_N_name)s",
    "ck": "ck_%(table_name)s_%(constraint_name)s",
    "fk": "fk_%(table_name)s_%(column_0_name)s_%(referred_table_name)s",
    "pk": "pk_%(table_name)s",
}


def _state_enum(enum_cls: type[Any], name: str) -> Enum:
    # Stored as plain strings (no native enum type), so adding a state needs no DDL.
    return Enum(
        enum_cls,
        name=name,
        native_enum=False,
        create_constraint=False,
        length=32,
        values_callable=lambda members: [m.value for m in members],
    )


class Base(DeclarativeBase):
    """Declarative base of all PEDL tables."""

    metadata = MetaData(naming_convention=NAMING_CONVENTION)
    type_annotation_map = {dict[str, Any]: JSONType, datetime: UTCDateTime}


class User(Base):
    """An account: who may sign in, with what password, and whether as an administrator."""

    __tablename__ = "users"

    id: Mapped[int] = mapped_column(Integer, primary_key=True)
    username: Mapped[str] = mapped_column(String(128), unique=True)
    password_hash: Mapped[str] = mapped_column(String(256))
    """The password's argon2id hash (PHC string); the password itself is never stored."""
    admin: Mapped[bool] = mapped_column(Boolean, default=False)
    active: Mapped[bool] = mapped_column(Boolean, default=True)
    """False once deactivated: the user can no longer sign in, and their tokens stop working."""
    created_at: Mapped[datetime] = mapped_column(default=utcnow)


class UserSession(Base):
    """A signed-in session: the hash of its bearer token, whose it is, and until when."""

    __tablename__ = "user_sessions"

    id: Mapped[int] = mapped_column(Integer, primary_key=True)
    token_hash: Mapped[str] = mapped_column(String(64), unique=True)
    """SHA-256 (hex) of the session's bearer token; the token itself is never stored."""
    user_id: Mapped[int] = mapped_column(ForeignKey("users.id", ondelete="CASCADE"), index=True)
    created_at: Mapped[datetime] = mapped_column(default=utcnow)
    expires_at: Mapped[datetime]


class Experiment(Base):
    """An experiment: a validated config, its model definition and the searcher's progress."""

    __tablename__ = "experiments"
    # An id is never given twice on SQLite either (PostgreSQL's sequences never do): without
    # AUTOINCREMENT, deleting the newest experiment would let the next one take its id.
    __table_args__ = {"sqlite_autoincrement": True}
    # A server default (project_id) is read when it is first used, not RETURNed by the INSERT.
    __mapper_args__ = {"eager_defaults": False}

    if TYPE_CHECKING:
        best_validation: Mapped[float | None]  # mapped below, once Trial exists
        workspace_id: Mapped[int]  # mapped in _workspace_models, from the project
        project_name: Mapped[str]
        workspace_name: Mapped[str]

    id: Mapped[int] = mapped_column(Integer, primary_key=True)
    name: Mapped[str | None] = mapped_column(String(512))
    description: Mapped[str | None] = mapped_column(Text)
    labels: Mapped[list[str]] = mapped_column(JSONType, default=list, server_default="[]")
    """Free-form tags (from the config, then as edited with ``PATCH``), in the user's order."""
    config: Mapped[dict[str, Any]] = mapped_column(OrderedJSONType)
    """The config as a canonical JSON document (defaults filled), its mappings in the order
    they were submitted (the user's hyperparameters in the user's order) on every backend."""
    config_text: Mapped[str] = mapped_column(Text)
    """The config exactly as submitted (YAML or JSON text)."""
    owner: Mapped[str] = mapped_column(String(128))
    """The username of the user who created it: with admins, the only one who may change it."""
    state: Mapped[ExperimentState] = mapped_column(
        _state_enum(ExperimentState, "experiment_state"), index=True
    )
    progress: Mapped[float] = mapped_column(Float, default=0.0)
    searcher_metric: Mapped[str | None] = mapped_column(String(256))
    smaller_is_better: Mapped[bool] = mapped_column(Boolean, default=True)
    created_at: Mapped[datetime] = mapped_column(default=utcnow)
    ended_at: Mapped[datetime | None]
    error: Mapped[str | None] = mapped_column(Text)
    """Why the experiment ended in ERROR (which trials failed how, or the searcher's error)."""
    notes: Mapped[str | None] = mapped_column(Text)
    """Free-form notes (Markdown in Determined's UI; the SDK's ``set_notes``)."""
    log_retention_days: Mapped[int | None] = mapped_column(Integer)
    """Days its trials' logs are kept after it ends (``det e set log-retention``): -1 or
    ``None``: forever; the master deletes older ones (:mod:`pedl.db.logs`)."""
    project_id: Mapped[int] = mapped_column(
        ForeignKey("projects.id"),
        index=True,
        server_default="1",
        deferred=True,
        deferred_group="project",
    )
    """The project it belongs to (:mod:`pedl.db._workspace_models`; 1, the server's default:
    ``Uncategorized``). Deferred with the project's names (the group ``project``): loaded on
    access, or with ``undefer_group("project")`` where a page of experiments is shown, so the
    orchestrator's reads of an experiment pay nothing for them."""

    model_definition: Mapped[ModelDefinition] = relationship(
        back_populates="experiment", cascade="all, delete-orphan", passive_deletes=True
    )


class ModelDefinition(Base):
    """The model definition archive (tar.gz) of one experiment, kept apart from the hot row."""

    __tablename__ = "model_definitions"

    experiment_id: Mapped[int] = mapped_column(
        ForeignKey("experiments.id", ondelete="CASCADE"), primary_key=True
    )
    archive: Mapped[bytes] = mapped_column(LargeBinary)
    size: Mapped[int] = mapped_column(BigInteger)
    sha256: Mapped[str] = mapped_column(String(64))

    experiment: Mapped[Experiment] = relationship(back_populates="model_definition")


class Trial(Base):
    """One hyperparameter configuration being trained."""

    __tablename__ = "trials"
    __table_args__ = (
        UniqueConstraint("experiment_id", "request_id"),
        # The per-state counts read every poll of an experiment: from the index alone.
        Index("ix_trials_experiment_id_state", "experiment_id", "state"),
        {"sqlite_autoincrement": True},  # ids never reused (as experiments')
    )

    id: Mapped[int] = mapped_column(Integer, primary_key=True)
    experiment_id: Mapped[int] = mapped_column(
        ForeignKey("experiments.id", ondelete="CASCADE"), index=True
    )
    request_id: Mapped[str | None] = mapped_column(String(64))
    """The searcher's id for this trial (unique within the experiment)."""
    hparams: Mapped[dict[str, Any]]
    seed: Mapped[int] = mapped_column(BigInteger)
    state: Mapped[TrialState] = mapped_column(_state_enum(TrialState, "trial_state"), index=True)
    restarts: Mapped[int] = mapped_column(Integer, default=0)
    total_batches: Mapped[int] = mapped_column(BigInteger, default=0)
    """The largest ``total_batches`` reported with training metrics."""
    latest_checkpoint_uuid: Mapped[str | None] = mapped_column(String(36))
    best_checkpoint_uuid: Mapped[str | None] = mapped_column(String(36))
    warm_start_checkpoint_uuid: Mapped[str | None] = mapped_column(String(36))
    """The checkpoint (of another trial) whose weights the trial started from, if any."""
    parent_trial_id: Mapped[int | None] = mapped_column(Integer)
    """A copy's parent (population-based training): the trial whose checkpoint
    ``warm_start_checkpoint_uuid`` (at ``parent_batches``) it started from."""
    parent_batches: Mapped[int | None] = mapped_column(BigInteger)
    changed_hparams: Mapped[dict[str, Any] | None]
    """A copy's hyperparameters that differ from its parent's (dotted names):
    ``{name: {"from": ..., "to": ...}}``."""
    best_validation: Mapped[float | None] = mapped_column(Float)
    """The best value of the searcher metric among this trial's validations."""
    outcome: Mapped[TrialOutcome | None] = mapped_column(_state_enum(TrialOutcome, "trial_outcome"))
    """How the trial's latest run ended (``None`` while it has not ended yet)."""
    error: Mapped[dict[str, Any] | None]
    """The latest error (:class:`pedl.vocabulary.TrialError` as a document), if it errored."""
    token_hash: Mapped[str] = mapped_column(String(64), unique=True)
    """SHA-256 (hex) of the trial's bearer token; the token itself is never stored."""
    created_at: Mapped[datetime] = mapped_column(default=utcnow)
    ended_at: Mapped[datetime | None]


ONLY_ON = "pedl_only_on"
"""The ``info`` key naming the one dialect a constraint exists on (:func:`only_on`)."""


def only_on(dialect: str, constraint: ForeignKeyConstraint) -> ForeignKeyConstraint:
    """``constraint``, created by SQLAlchemy on ``dialect`` alone (``ddl_if``), and marked so
    that Alembic compares it there alone (:func:`exists_on`)."""
    constraint.info[ONLY_ON] = dialect
    return constraint.ddl_if(dialect=dialect)


def exists_on(dialect: str) -> Callable[[Any, str | None, str, bool, Any], bool]:
    """Alembic's ``include_object`` hook for ``dialect``'s schema: leaves out a constraint
    that :func:`only_on` keeps to another dialect (Alembic would otherwise report it
    missing)."""

    def include(obj: Any, name: str | None, type_: str, reflected: bool, compare_to: Any) -> bool:
        info = getattr(obj, "info", None) or {}
        return info.get(ONLY_ON) in (None, dialect)

    return include


class Metric(Base):
    """One reported row of a training or validation series, keyed by its batch count.

    Its trial must exist and its rows go with the trial. On SQLite that is a foreign key
    (``ON DELETE CASCADE``). On PostgreSQL a foreign key checks every row it inserts (a third
    of the server's time per metric row), so statement triggers (migration 0018) check each
    statement's trials once, locking them as the key would, and delete a deleted trial's
    rows."""

    __tablename__ = "metrics"
    __table_args__ = (
        UniqueConstraint("trial_id", "kind", "total_batches"),
        only_on("sqlite", ForeignKeyConstraint(["trial_id"], ["trials.id"], ondelete="CASCADE")),
    )

    id: Mapped[int] = mapped_column(BigIntPK, primary_key=True, autoincrement=True)
    trial_id: Mapped[int] = mapped_column(Integer)
    kind: Mapped[MetricKind] = mapped_column(_state_enum(MetricKind, "metric_kind"))
    total_batches: Mapped[int] = mapped_column(BigInteger)
    total_records: Mapped[int | None] = mapped_column(BigInteger)
    total_epochs: Mapped[float | None] = mapped_column(Float)
    metrics: Mapped[dict[str, Any]] = mapped_column(OrderedJSONType)
    """The row's metrics as reported: PostgreSQL's ``json`` (its text), not ``jsonb``, which
    costs its server half as much CPU again per row to store (migration 0019)."""
    reported_at: Mapped[datetime] = mapped_column(default=utcnow)


class Checkpoint(Base):
    """A checkpoint a trial stored: where it is, how big, at which batch."""

    __tablename__ = "checkpoints"

    id: Mapped[int] = mapped_column(Integer, primary_key=True)
    uuid: Mapped[str] = mapped_column(String(36), unique=True)
    trial_id: Mapped[int] = mapped_column(Integer, index=True)
    """The trial that stored it. No foreign key: a checkpoint registered in the model
    registry outlives its experiment (``experiments.delete_experiment`` deletes the others'
    rows itself, records the survivors' origin in ``detached`` and negates their
    ``trial_id``, so that no trial created later, even under a reused id, finds them)."""
    total_batches: Mapped[int] = mapped_column(BigInteger)
    state: Mapped[CheckpointState] = mapped_column(_state_enum(CheckpointState, "checkpoint_state"))
    metadata_: Mapped[dict[str, Any]] = mapped_column("metadata", JSONType)
    resources: Mapped[dict[str, Any]]
    """``{relative path: size in bytes}`` of every file in the checkpoint."""
    created_at: Mapped[datetime] = mapped_column(default=utcnow)
    searcher_metric: Mapped[float | None] = mapped_column(Float)
    """The searcher metric of the validation at the checkpoint's batch count, if any (kept
    by ``trials.refresh_trial_best``), to rank checkpoints in the database."""
    detached: Mapped[dict[str, Any] | None]
    """Set when its experiment was deleted while a model version kept it:
    ``{"experiment_id": ..., "trial_id": ..., "checkpoint_storage": <the experiment's storage
    config>}``, all that is left to find its files by."""


class TrialLog(Base):
    """One line of a trial's output, numbered by the trial so re-sends are idempotent."""

    __tablename__ = "trial_logs"
    __table_args__ = (UniqueConstraint("trial_id", "seq"),)

    id: Mapped[int] = mapped_column(BigIntPK, primary_key=True, autoincrement=True)
    trial_id: Mapped[int] = mapped_column(ForeignKey("trials.id", ondelete="CASCADE"))
    seq: Mapped[int] = mapped_column(BigInteger)
    message: Mapped[str] = mapped_column(Text)
    level: Mapped[str | None] = mapped_column(String(16))
    stream: Mapped[str | None] = mapped_column(String(16))
    timestamp: Mapped[datetime | None]
    """When the trial produced the line (its clock); ``None`` if it did not say."""
    rank: Mapped[int | None] = mapped_column(Integer, nullable=True)
    """The worker of a multi-worker trial that wrote the line; ``None``: a one-process
    trial's line, or the master's."""


class SearcherEvent(Base):
    """One event in an experiment's append-only searcher log (numbered from 1)."""

    __tablename__ = "searcher_events"
    __table_args__ = (UniqueConstraint("experiment_id", "seq"),)

    id: Mapped[int] = mapped_column(BigIntPK, primary_key=True, autoincrement=True)
    experiment_id: Mapped[int] = mapped_column(ForeignKey("experiments.id", ondelete="CASCADE"))
    seq: Mapped[int] = mapped_column(BigInteger)
    event: Mapped[dict[str, Any]]
    created_at: Mapped[datetime] = mapped_column(default=utcnow)


class SearcherSnapshot(Base):
    """The searcher's serialised state after applying events ``1..event_seq``."""

    __tablename__ = "searcher_snapshots"

    experiment_id: Mapped[int] = mapped_column(
        ForeignKey("experiments.id", ondelete="CASCADE"), primary_key=True
    )
    event_seq: Mapped[int] = mapped_column(BigInteger)
    state: Mapped[dict[str, Any]]
    updated_at: Mapped[datetime] = mapped_column(default=utcnow)


Experiment.best_validation = column_property(
    select(
        case(
            (Experiment.smaller_is_better, func.min(Trial.best_validation)),
            else_=func.max(Trial.best_validation),
        )
    )
    .where(Trial.experiment_id == Experiment.id)
    .correlate_except(Trial)
    .scalar_subquery(),
    deferred=True,
)
"""The best searcher-metric value any trial of the experiment has validated with (loaded on
access, or with ``undefer`` where a page of experiments is read)."""
