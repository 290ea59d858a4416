"""``/api/v1/models``: the model registry (Determined's ``det model``).

A model is a name (with a description, labels, metadata and notes) under which checkpoints
are registered as numbered versions 1, 2, ...; a registered checkpoint is never deleted by
retention or with its experiment. Any signed-in user reads models and registers versions;
a model's creator or an administrator changes or deletes it (403 otherwise), a version's
registrant, the model's creator or an administrator deletes a version.
"""

from __future__ import annotations

import json
from datetime import datetime
from typing import Annotated, Any, Literal
from uuid import UUID

from fastapi import APIRouter, Path, Query, Response
from pydantic import AfterValidator, BaseModel, ConfigDict, Field
from sqlalchemy.orm import Session

from pedl.db import registry as registry_repo
from pedl.db._registry_models import ModelVersion, RegisteredModel
from pedl.db._types import utcnow
from pedl.master.api._auth import (
    OWNER_RESPONSES,
    USER_AUTH_RESPONSES,
    CurrentUser,
    UserPrincipal,
    require_owner,
    require_user,
)
from pedl.master.api._deps import ReadSession, WriteSession
from pedl.master.api._errors import ERROR_RESPONSES
from pedl.master.api._schemas import (
    MAX_DESCRIPTION,
    MAX_LABELS,
    CheckpointPublic,
    JSONDocument,
    Label,
    Page,
)
from pedl.master.api.checkpoints import describe_checkpoint

router = APIRouter(
    prefix="/models",
    tags=["models"],
    responses={**ERROR_RESPONSES, **USER_AUTH_RESPONSES},
)

MAX_MODEL_NAME = 255
MAX_NOTES = 100_000
MAX_METADATA_BYTES = 64 * 1024
MAX_VERSIONS = 10_000


def _check_name(value: str) -> str:
    if "\x00" in value or "/" in value:
        raise ValueError("a model name may not contain NUL or '/'")
    if value != value.strip():
        raise ValueError("a model name may not begin or end with whitespace")
    if value.isdigit():
        raise ValueError("a model name may not be all digits (it would read as a model id)")
    return value


def _check_text(value: str) -> str:
    if "\x00" in value:
        raise ValueError("NUL characters are not allowed")
    return value


def _check_metadata(value: dict[str, Any]) -> dict[str, Any]:
    if len(json.dumps(value)) > MAX_METADATA_BYTES:
        raise ValueError(f"metadata is larger than {MAX_METADATA_BYTES:,} bytes as JSON")
    return value


ModelName = Annotated[
    str, Field(min_length=1, max_length=MAX_MODEL_NAME), AfterValidator(_check_name)
]
ModelRef = Annotated[str, Path(min_length=1, max_length=MAX_MODEL_NAME)]
Description = Annotated[str, Field(max_length=MAX_DESCRIPTION), AfterValidator(_check_text)]
Notes = Annotated[str, Field(max_length=MAX_NOTES), AfterValidator(_check_text)]
Metadata = Annotated[JSONDocument, AfterValidator(_check_metadata)]
Labels = Annotated[list[Label], Field(max_length=MAX_LABELS)]
VersionName = Annotated[str, Field(min_length=1, max_length=255), AfterValidator(_check_text)]
VersionNumber = Annotated[int, Path(ge=-1, le=2**31 - 1)]


class ModelPublic(BaseModel):
    """A model as the API shows it."""

    id: int
    name: str
    description: str
    notes: str
    labels: list[str]
    metadata: dict[str, Any]
    owner: str = Field(description="The username of its creator.")
    archived: bool
    created_at: datetime
    updated_at: datetime
    num_versions: int


class ModelCreate(BaseModel):
    """Body of ``POST /models``."""

    model_config = ConfigDict(extra="forbid")

    name: ModelName = Field(
        description="1 to 255 characters: no NUL or '/', not all digits, no outer spaces."
    )
    description: Description = Field(default="", description="At most 10,000 characters.")
    labels: Labels = Field(
        default_factory=list, description="At most 100 labels of 1 to 255 characters."
    )
    metadata: Metadata = Field(default_factory=dict, description="At most 64 KiB as JSON.")
    notes: Notes = Field(default="", description="At most 100,000 characters.")


class ModelPatch(BaseModel):
    """Body of ``PATCH /models/{model}``: what to change (a field left out stays)."""

    model_config = ConfigDict(extra="forbid")

    name: ModelName | None = None
    description: Description | None = None
    labels: Labels | None = None
    metadata: Metadata | None = None
    notes: Notes | None = None
    archived: bool | None = None


class ModelVersionPublic(BaseModel):
    """A model version as the API shows it: its model, its number and its checkpoint."""

    id: int
    model_id: int
    model_name: str
    version: int
    checkpoint: CheckpointPublic
    name: str | None
    comment: str
    notes: str
    labels: list[str]
    metadata: dict[str, Any]
    owner: str = Field(description="The username of who registered it.")
    created_at: datetime
    updated_at: datetime


class ModelVersionCreate(BaseModel):
    """Body of ``POST /models/{model}/versions``."""

    model_config = ConfigDict(extra="forbid")

    checkpoint_uuid: UUID
    name: (
        Annotated[str, Field(min_length=1, max_length=255), AfterValidator(_check_text)] | None
    ) = None
    comment: Description = Field(default="", description="At most 10,000 characters.")
    labels: Labels = Field(default_factory=list)
    metadata: Metadata = Field(default_factory=dict)


class ModelVersionPatch(BaseModel):
    """Body of ``PATCH /models/{model}/versions/{version}``: what to change (a field left out
    stays; Determined's ``ModelVersion.set_name``/``set_notes``)."""

    model_config = ConfigDict(extra="forbid")

    name: (
        Annotated[str, Field(min_length=1, max_length=255), AfterValidator(_check_text)] | None
    ) = None
    comment: Description | None = None
    notes: Notes | None = None
    labels: Labels | None = None
    metadata: Metadata | None = None


def model_public(model: RegisteredModel, num_versions: int) -> ModelPublic:
    """The public view of a model row."""
    return ModelPublic(
        id=model.id,
        name=model.name,
        description=model.description,
        notes=model.notes,
        labels=list(model.labels),
        metadata=dict(model.metadata_),
        owner=model.owner,
        archived=model.archived,
        created_at=model.created_at,
        updated_at=model.updated_at,
        num_versions=num_versions,
    )


def version_public(
    session: Session, model: RegisteredModel, version: ModelVersion
) -> ModelVersionPublic:
    """The public view of a version row, with its checkpoint as ``GET /checkpoints`` shows it."""
    return ModelVersionPublic(
        id=version.id,
        model_id=model.id,
        model_name=model.name,
        version=version.version,
        checkpoint=describe_checkpoint(session, version.checkpoint_uuid),
        name=version.name,
        comment=version.comment,
        notes=version.notes,
        labels=list(version.labels),
        metadata=dict(version.metadata_),
        owner=version.owner,
        created_at=version.created_at,
        updated_at=version.updated_at,
    )


def _count(session: Session, model: RegisteredModel) -> int:
    return registry_repo.count_versions(session, model)


@router.post("", status_code=201, dependencies=[require_user])
def create_model(body: ModelCreate, session: WriteSession, user: CurrentUser) -> ModelPublic:
    """Create a model (409 when the name is taken)."""
    model = registry_repo.create_model(
        session,
        body.name,
        owner=user.username,
        description=body.description,
        labels=body.labels,
        metadata=body.metadata,
        notes=body.notes,
    )
    return model_public(model, 0)


@router.get("", dependencies=[require_user])
def list_models(
    session: ReadSession,
    name: Annotated[str | None, Query(max_length=MAX_MODEL_NAME)] = None,
    label: Annotated[str | None, Query(max_length=255)] = None,
    archived: bool | None = None,
    sort_by: Literal["name", "description", "created_at", "updated_at", "id"] = "name",
    order: Literal["asc", "desc"] = "asc",
    limit: Annotated[int, Query(ge=1, le=1000)] = 100,
    offset: Annotated[int, Query(ge=0, le=2**31 - 1)] = 0,
) -> Page[ModelPublic]:
    """One page of models; ``name`` matches part of the name (any case), ``label`` one
    label, ``archived`` true or false only those."""
    rows, total = registry_repo.list_models(
        session,
        name=name,
        label=label,
        archived=archived,
        sort_by=sort_by,
        ascending=order == "asc",
        limit=limit,
        offset=offset,
    )
    return Page(
        items=[model_public(m, n) for m, n in rows], total=total, offset=offset, limit=limit
    )


@router.get("/{model}", dependencies=[require_user])
def get_model(model: ModelRef, session: ReadSession) -> ModelPublic:
    """One model, by name or id."""
    found = registry_repo.get_model(session, model)
    return model_public(found, _count(session, found))


@router.patch("/{model}", responses=OWNER_RESPONSES)
def patch_model(
    model: ModelRef, body: ModelPatch, session: WriteSession, user: CurrentUser
) -> ModelPublic:
    """Change a model's name, description, labels, metadata (replaced whole), notes or
    archived flag; its creator or an administrator only."""
    found = registry_repo.get_model(session, model, for_update=True)
    require_owner(user, found.owner, f"model {found.name!r}")
    registry_repo.update_model(
        session,
        found,
        name=body.name,
        description=body.description,
        labels=body.labels,
        metadata=body.metadata,
        notes=body.notes,
        archived=body.archived,
    )
    return model_public(found, _count(session, found))


@router.delete("/{model}", status_code=204, responses=OWNER_RESPONSES)
def delete_model(model: ModelRef, session: WriteSession, user: CurrentUser) -> Response:
    """Delete a model and its versions (their checkpoints stay, no longer kept by the
    registry); its creator or an administrator only."""
    found = registry_repo.get_model(session, model, for_update=True)
    require_owner(user, found.owner, f"model {found.name!r}")
    registry_repo.delete_model(session, found)
    return Response(status_code=204)


@router.post("/{model}/versions", status_code=201, dependencies=[require_user])
def register_version(
    model: ModelRef, body: ModelVersionCreate, session: WriteSession, user: CurrentUser
) -> ModelVersionPublic:
    """Register a COMPLETED checkpoint as the model's next version (404: no such checkpoint,
    409: not COMPLETED, already a version of this model (the message names it), or the
    model has 10,000 versions)."""
    found = registry_repo.get_model(session, model)
    version = registry_repo.register_version(
        session,
        found,
        str(body.checkpoint_uuid),
        owner=user.username,
        name=body.name,
        comment=body.comment,
        labels=body.labels,
        metadata=body.metadata,
        max_versions=MAX_VERSIONS,
    )
    return version_public(session, found, version)


@router.get("/{model}/versions", dependencies=[require_user])
def list_versions(
    model: ModelRef, session: ReadSession, order: Literal["asc", "desc"] = "desc"
) -> list[ModelVersionPublic]:
    """Every version of a model, newest first (``order=asc``: oldest first)."""
    found = registry_repo.get_model(session, model)
    return [
        version_public(session, found, v)
        for v in registry_repo.list_versions(session, found, ascending=order == "asc")
    ]


@router.get("/{model}/versions/{version}", dependencies=[require_user])
def get_version(
    model: ModelRef, version: VersionNumber, session: ReadSession
) -> ModelVersionPublic:
    """Version ``version`` of a model (``-1``: the latest)."""
    found = registry_repo.get_model(session, model)
    return version_public(session, found, registry_repo.get_version(session, found, version))


@router.patch("/{model}/versions/{version}", responses=OWNER_RESPONSES)
def patch_version(
    model: ModelRef,
    version: VersionNumber,
    body: ModelVersionPatch,
    session: WriteSession,
    user: CurrentUser,
) -> ModelVersionPublic:
    """Change one version's name, comment, notes, labels or metadata (replaced whole); who
    registered it, the model's creator or an administrator."""
    found = registry_repo.get_model(session, model, for_update=True)
    row = registry_repo.get_version(session, found, version)
    _require_version_owner(user, found, row)
    for field in ("name", "comment", "notes", "labels", "metadata"):
        if field in body.model_fields_set and getattr(body, field) is not None:
            setattr(row, "metadata_" if field == "metadata" else field, getattr(body, field))
    row.updated_at = found.updated_at = utcnow()
    session.flush()
    return version_public(session, found, row)


@router.delete("/{model}/versions/{version}", status_code=204, responses=OWNER_RESPONSES)
def delete_version(
    model: ModelRef, version: VersionNumber, session: WriteSession, user: CurrentUser
) -> Response:
    """Delete one version (its checkpoint stays); who registered it, the model's creator or
    an administrator."""
    found = registry_repo.get_model(session, model, for_update=True)
    row = registry_repo.get_version(session, found, version)
    _require_version_owner(user, found, row)
    registry_repo.delete_version(session, row)
    found.updated_at = utcnow()
    return Response(status_code=204)


def _require_version_owner(user: UserPrincipal, model: RegisteredModel, row: ModelVersion) -> None:
    if user.username == row.owner:
        return
    require_owner(user, model.owner, f"model {model.name!r}")
