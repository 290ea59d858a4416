"""Queries on the model registry: models, their versions, and which checkpoints they keep."""

from __future__ import annotations

from collections.abc import Collection, Mapping, Sequence
from typing import Any

from sqlalchemy import func, select
from sqlalchemy.exc import IntegrityError
from sqlalchemy.orm import Session

from pedl.db import checkpoints as checkpoints_repo
from pedl.db._errors import ConflictError, NotFoundError
from pedl.db._registry_models import ModelVersion, RegisteredModel
from pedl.db._types import utcnow
from pedl.vocabulary import CheckpointState


def create_model(
    session: Session,
    name: str,
    *,
    owner: str,
    description: str = "",
    labels: Sequence[str] = (),
    metadata: Mapping[str, Any] | None = None,
    notes: str = "",
) -> RegisteredModel:
    """A new model; raises :class:`ConflictError` (field ``name``) when the name is taken."""
    if session.scalar(select(RegisteredModel.id).where(RegisteredModel.name == name)) is not None:
        raise ConflictError(f"a model named {name!r} already exists", field="name")
    now = utcnow()
    model = RegisteredModel(
        name=name,
        owner=owner,
        description=description,
        labels=list(dict.fromkeys(labels)),
        metadata_=dict(metadata or {}),
        notes=notes,
        archived=False,
        created_at=now,
        updated_at=now,
    )
    session.add(model)
    try:
        with session.begin_nested():
            session.flush()
    except IntegrityError as err:  # created concurrently under the same name
        raise ConflictError(f"a model named {name!r} already exists", field="name") from err
    return model


def get_model(session: Session, ref: str | int, *, for_update: bool = False) -> RegisteredModel:
    """The model with this id (an int or a string of digits) or name; raises
    :class:`NotFoundError`. Names are never all digits, so the two cannot clash."""
    query = select(RegisteredModel)
    if isinstance(ref, int) or ref.isdigit():
        query = query.where(RegisteredModel.id == int(ref))
    else:
        query = query.where(RegisteredModel.name == ref)
    if for_update:
        query = query.with_for_update()
    model = session.scalars(query).one_or_none()
    if model is None:
        raise NotFoundError("model", ref)
    return model


def list_models(
    session: Session,
    *,
    name: str | None = None,
    label: str | None = None,
    archived: bool | None = None,
    sort_by: str = "name",
    ascending: bool = True,
    limit: int = 100,
    offset: int = 0,
) -> tuple[list[tuple[RegisteredModel, int]], int]:
    """One page of ``(model, number of versions)`` and the total count; ``name`` matches a
    part of the name (case-insensitive), ``label`` one label exactly."""
    conditions: list[Any] = []
    if name:
        conditions.append(func.lower(RegisteredModel.name).contains(name.lower(), autoescape=True))
    if archived is not None:
        conditions.append(RegisteredModel.archived.is_(archived))
    versions = (
        select(func.count(ModelVersion.id))
        .where(ModelVersion.model_id == RegisteredModel.id)
        .correlate(RegisteredModel)
        .scalar_subquery()
    )
    column = {
        "name": RegisteredModel.name,
        "description": RegisteredModel.description,
        "created_at": RegisteredModel.created_at,
        "updated_at": RegisteredModel.updated_at,
        "id": RegisteredModel.id,
    }[sort_by]
    order = column if ascending else column.desc()
    query = select(RegisteredModel, versions).where(*conditions).order_by(order, RegisteredModel.id)
    if label is not None:  # labels are a JSON list: filtered here, the same on every backend
        rows = [(m, int(n)) for m, n in session.execute(query) if label in m.labels]
        return rows[offset : offset + limit], len(rows)
    total = session.scalar(select(func.count(RegisteredModel.id)).where(*conditions)) or 0
    page = session.execute(query.limit(limit).offset(offset))
    return [(model, int(count)) for model, count in page], total


def update_model(
    session: Session,
    model: RegisteredModel,
    *,
    name: str | None = None,
    description: str | None = None,
    notes: str | None = None,
    labels: Sequence[str] | None = None,
    metadata: Mapping[str, Any] | None = None,
    archived: bool | None = None,
) -> RegisteredModel:
    """Change the fields given (``None``: left as it is)."""
    if name is not None and name != model.name:
        taken = session.scalar(select(RegisteredModel.id).where(RegisteredModel.name == name))
        if taken is not None:
            raise ConflictError(f"a model named {name!r} already exists", field="name")
        model.name = name
    if description is not None:
        model.description = description
    if notes is not None:
        model.notes = notes
    if labels is not None:
        model.labels = list(dict.fromkeys(labels))
    if metadata is not None:
        model.metadata_ = dict(metadata)
    if archived is not None:
        model.archived = archived
    model.updated_at = utcnow()
    session.flush()
    return model


def delete_model(session: Session, model: RegisteredModel) -> None:
    """Delete the model and its versions (never their checkpoints)."""
    for version in session.scalars(select(ModelVersion).where(ModelVersion.model_id == model.id)):
        session.delete(version)
    session.delete(model)
    session.flush()


def register_version(
    session: Session,
    model: RegisteredModel,
    checkpoint_uuid: str,
    *,
    owner: str,
    name: str | None = None,
    comment: str = "",
    labels: Sequence[str] = (),
    metadata: Mapping[str, Any] | None = None,
    max_versions: int,
) -> ModelVersion:
    """The model's next version, holding the checkpoint. Raises :class:`NotFoundError` for
    an unknown checkpoint and :class:`ConflictError` (field ``checkpoint_uuid``) for one that
    is not COMPLETED (its files may be gone) or that a version of the model already holds
    (the message names that version), or (field ``model``) when the model already has
    ``max_versions``."""
    checkpoint = checkpoints_repo.get_checkpoint(session, checkpoint_uuid, for_update=True)
    if checkpoint.state != CheckpointState.COMPLETED:
        raise ConflictError(
            f"checkpoint {checkpoint_uuid} is {checkpoint.state.value}: only a COMPLETED "
            "checkpoint can be registered",
            field="checkpoint_uuid",
        )
    locked = get_model(session, model.id, for_update=True)
    holding = session.scalar(
        select(func.min(ModelVersion.version)).where(
            ModelVersion.model_id == locked.id, ModelVersion.checkpoint_uuid == checkpoint_uuid
        )
    )
    if holding is not None:
        raise ConflictError(
            f"checkpoint {checkpoint_uuid} is already version {holding} of model {locked.name!r}",
            field="checkpoint_uuid",
        )
    latest = session.scalar(
        select(func.max(ModelVersion.version)).where(ModelVersion.model_id == locked.id)
    )
    count = session.scalar(
        select(func.count(ModelVersion.id)).where(ModelVersion.model_id == locked.id)
    )
    if (count or 0) >= max_versions:
        raise ConflictError(
            f"model {locked.name!r} already has {max_versions} versions, the most a model may "
            "have; delete one or create another model",
            field="model",
        )
    now = utcnow()
    version = ModelVersion(
        model_id=locked.id,
        version=(latest or 0) + 1,
        checkpoint_uuid=checkpoint_uuid,
        name=name,
        comment=comment,
        notes="",
        labels=list(dict.fromkeys(labels)),
        metadata_=dict(metadata or {}),
        owner=owner,
        created_at=now,
        updated_at=now,
    )
    session.add(version)
    locked.updated_at = now
    session.flush()
    return version


def get_version(session: Session, model: RegisteredModel, version: int) -> ModelVersion:
    """Version ``version`` of the model (``-1``: the latest); raises :class:`NotFoundError`."""
    query = select(ModelVersion).where(ModelVersion.model_id == model.id)
    if version == -1:
        query = query.order_by(ModelVersion.version.desc()).limit(1)
    else:
        query = query.where(ModelVersion.version == version)
    found = session.scalars(query).first()
    if found is None:
        raise NotFoundError(f"model {model.name!r} version", version)
    return found


def list_versions(
    session: Session, model: RegisteredModel, *, ascending: bool = False
) -> list[ModelVersion]:
    """Every version of the model, newest first unless ``ascending``."""
    order = ModelVersion.version if ascending else ModelVersion.version.desc()
    query = select(ModelVersion).where(ModelVersion.model_id == model.id).order_by(order)
    return list(session.scalars(query))


def count_versions(session: Session, model: RegisteredModel) -> int:
    """How many versions the model has."""
    query = select(func.count(ModelVersion.id)).where(ModelVersion.model_id == model.id)
    return session.scalar(query) or 0


def delete_version(session: Session, version: ModelVersion) -> None:
    """Delete one version (its checkpoint stays, no longer held by it)."""
    session.delete(version)
    session.flush()


def versions_holding(session: Session, uuids: Collection[str]) -> list[tuple[str, str, int]]:
    """The model versions holding these checkpoints: ``(checkpoint uuid, model name,
    version)``, by model name and version."""
    if not uuids:
        return []
    query = (
        select(ModelVersion.checkpoint_uuid, RegisteredModel.name, ModelVersion.version)
        .join(RegisteredModel, RegisteredModel.id == ModelVersion.model_id)
        .where(ModelVersion.checkpoint_uuid.in_(list(uuids)))
        .order_by(RegisteredModel.name, ModelVersion.version)
    )
    return [(uuid, name, number) for uuid, name, number in session.execute(query)]


def registrations(session: Session, uuids: Collection[str]) -> dict[str, list[str]]:
    """For each of these checkpoints held by model versions: ``["NAME v3", ...]``."""
    held: dict[str, list[str]] = {}
    for uuid, name, number in versions_holding(session, uuids):
        held.setdefault(uuid, []).append(f"{name} v{number}")
    return held
