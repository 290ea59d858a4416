"""``/api/v1/checkpoints``: a checkpoint by uuid; its metadata; the model versions holding
some checkpoints; deleting it by hand (``det checkpoint delete``), or some of its files
(``det checkpoint rm``)."""

from __future__ import annotations

import fnmatch
import json
import logging
import shutil
import tempfile
from pathlib import Path
from typing import Annotated, Any
from uuid import UUID

from fastapi import APIRouter, Query, Response
from pydantic import AfterValidator, BaseModel, ConfigDict, Field, TypeAdapter
from sqlalchemy.orm import Session

from pedl.config import CheckpointStorageConfig, ConfigError, parse_config
from pedl.db import Checkpoint
from pedl.db import checkpoints as checkpoints_repo
from pedl.db import experiments as experiments_repo
from pedl.db import metrics as metrics_repo
from pedl.db import registry as registry_repo
from pedl.db import trials as trials_repo
from pedl.master.api._auth import (
    OWNER_RESPONSES,
    USER_AUTH_RESPONSES,
    CurrentUser,
    UserPrincipal,
    require_owner,
    require_user,
)
from pedl.master.api._convert import checkpoint_public
from pedl.master.api._deps import DatabaseDep, ReadSession
from pedl.master.api._errors import ERROR_RESPONSES, ApiError
from pedl.master.api._schemas import CheckpointPublic, ErrorResponse, JSONDocument
from pedl.storage import SharedFSStorage, StorageManager, UnsupportedStorageError, make_storage

logger = logging.getLogger(__name__)

router = APIRouter(
    prefix="/checkpoints",
    tags=["checkpoints"],
    responses={**ERROR_RESPONSES, **USER_AUTH_RESPONSES},
)

MAX_METADATA_CHANGE_BYTES = 64 * 1024
MAX_REMOVED_KEYS = 1000
MAX_LOOKED_UP = 1000


def describe_checkpoint(session: Session, uuid: str) -> CheckpointPublic:
    """The checkpoint as ``GET /checkpoints/{uuid}`` shows it: with the validation metrics
    its trial reported at the same batch, or, once its experiment is deleted (a model
    version kept it), with its former experiment and trial ids and no metrics."""
    checkpoint = checkpoints_repo.get_checkpoint(session, uuid)
    if checkpoint.detached is not None:
        return checkpoint_public(checkpoint, int(checkpoint.detached["experiment_id"]), None)
    trial = trials_repo.get_trial(session, checkpoint.trial_id)
    return checkpoint_public(
        checkpoint,
        trial.experiment_id,
        metrics_repo.validation_metrics_at(session, trial.id, checkpoint.total_batches),
    )


def storage_config_of(session: Session, checkpoint: Checkpoint) -> CheckpointStorageConfig:
    """The ``checkpoint_storage`` the checkpoint's files are in: its experiment's, or the one
    kept with it once the experiment is deleted."""
    try:
        if checkpoint.detached is not None:
            kept = checkpoint.detached["checkpoint_storage"]
            return TypeAdapter(CheckpointStorageConfig).validate_python(kept)
        trial = trials_repo.get_trial(session, checkpoint.trial_id)
        config = experiments_repo.get_experiment(session, trial.experiment_id).config
        return parse_config(config).checkpoint_storage
    except (ConfigError, ValueError) as err:
        raise ApiError(
            500, f"the stored checkpoint storage of checkpoint {checkpoint.uuid} is invalid"
        ) from err


def storage_of(session: Session, checkpoint: Checkpoint) -> StorageManager:
    """The storage backend holding the checkpoint's files (501: not usable here)."""
    try:
        return make_storage(storage_config_of(session, checkpoint))
    except UnsupportedStorageError as err:
        raise ApiError(501, str(err), field="checkpoint_storage") from err


def _require_checkpoint_owner(
    session: Session, checkpoint: Checkpoint, user: UserPrincipal
) -> None:
    """403 unless ``user`` owns the checkpoint's experiment or is an administrator (only an
    administrator once the experiment is gone)."""
    if checkpoint.detached is not None:
        if not user.admin:
            raise ApiError(
                403,
                f"checkpoint {checkpoint.uuid} outlived its experiment: only an administrator "
                "may change it",
                field="Authorization",
            )
        return
    trial = trials_repo.get_trial(session, checkpoint.trial_id)
    owner = experiments_repo.get_experiment(session, trial.experiment_id).owner
    require_owner(user, owner, f"checkpoint {checkpoint.uuid} (experiment {trial.experiment_id})")


def _bounded(value: dict[str, Any]) -> dict[str, Any]:
    if len(json.dumps(value)) > MAX_METADATA_CHANGE_BYTES:
        raise ValueError(f"at most {MAX_METADATA_CHANGE_BYTES:,} bytes as JSON")
    return value


class MetadataChange(BaseModel):
    """Body of ``PATCH /checkpoints/{uuid}/metadata``: top-level keys to set and to drop."""

    model_config = ConfigDict(extra="forbid")

    add: Annotated[JSONDocument, AfterValidator(_bounded)] = Field(
        default_factory=dict, description="Keys to set (replacing); at most 64 KiB as JSON."
    )
    remove: list[Annotated[str, Field(max_length=1024)]] = Field(
        default_factory=list, max_length=MAX_REMOVED_KEYS, description="Keys to drop."
    )


class CheckpointRegistration(BaseModel):
    """A model version holding a checkpoint."""

    checkpoint_uuid: str
    model_name: str
    version: int


@router.get("/model-versions", dependencies=[require_user])
def model_versions_holding(
    session: ReadSession,
    uuid: Annotated[list[UUID], Query(min_length=1, max_length=MAX_LOOKED_UP)],
) -> list[CheckpointRegistration]:
    """The model versions holding any of these checkpoints (``uuid`` repeated, at most
    1,000), by model name and version: what a checkpoints table marks as registered."""
    return [
        CheckpointRegistration(checkpoint_uuid=c, model_name=name, version=number)
        for c, name, number in registry_repo.versions_holding(session, {str(u) for u in uuid})
    ]


@router.get("/{checkpoint_uuid}", dependencies=[require_user])
def get_checkpoint(checkpoint_uuid: UUID, session: ReadSession) -> CheckpointPublic:
    """One checkpoint, with the validation metrics its trial reported at the same batch."""
    return describe_checkpoint(session, str(checkpoint_uuid))


@router.get("/{checkpoint_uuid}/trials", dependencies=[require_user])
def trials_using_checkpoint(checkpoint_uuid: UUID, session: ReadSession) -> list[int]:
    """The ids of the trials that started from this checkpoint (warm start), in order: whose
    metrics Determined's ``Checkpoint.get_metrics`` returns."""
    uuid = str(checkpoint_uuid)
    checkpoints_repo.get_checkpoint(session, uuid)
    return checkpoints_repo.trials_started_from(session, uuid)


@router.patch("/{checkpoint_uuid}/metadata", responses=OWNER_RESPONSES)
def change_metadata(
    checkpoint_uuid: UUID, body: MetadataChange, database: DatabaseDep, user: CurrentUser
) -> CheckpointPublic:
    """Set (``add``) and drop (``remove``) top-level keys of a checkpoint's metadata, as
    Determined's ``Checkpoint.add_metadata``/``remove_metadata`` do; the files in storage are
    not changed. The experiment's owner or an administrator."""
    uuid = str(checkpoint_uuid)
    with database.session(write=True) as session:
        checkpoint = checkpoints_repo.get_checkpoint(session, uuid, for_update=True)
        _require_checkpoint_owner(session, checkpoint, user)
        checkpoints_repo.update_metadata(session, uuid, add=body.add, remove=body.remove)
    with database.session() as session:
        return describe_checkpoint(session, uuid)


@router.delete(
    "/{checkpoint_uuid}",
    status_code=204,
    responses={
        **OWNER_RESPONSES,
        501: {"model": ErrorResponse, "description": "Its storage is not usable here"},
        502: {"model": ErrorResponse, "description": "Marked DELETED; its files stayed"},
    },
)
def delete_checkpoint(checkpoint_uuid: UUID, database: DatabaseDep, user: CurrentUser) -> Response:
    """Delete a checkpoint's files from its storage and mark it DELETED (``det checkpoint
    delete``); the experiment's owner or an administrator. 409, with the reason, for one a
    model version holds or the latest checkpoint of a trial that may still run. Deleting a
    DELETED checkpoint again does nothing."""
    uuid = str(checkpoint_uuid)
    with database.session(write=True) as session:
        checkpoint = checkpoints_repo.get_checkpoint(session, uuid, for_update=True)
        _require_checkpoint_owner(session, checkpoint, user)
        if checkpoint.state.value == "DELETED":
            return Response(status_code=204)
        refusal = checkpoints_repo.deletion_refusal(session, checkpoint)
        if refusal is not None:
            raise ApiError(409, refusal, field="checkpoint_uuid")
        storage = storage_of(session, checkpoint)
        checkpoints_repo.claim_for_deletion(session, [uuid])
    try:
        storage.delete(uuid)
    except Exception as err:
        logger.warning("checkpoint %s marked deleted, files not removed: %s", uuid, err)
        raise ApiError(
            502,
            f"checkpoint {uuid} is marked DELETED but its files could not be removed from "
            f"storage: {err}",
        ) from err
    return Response(status_code=204)


MAX_GLOBS = 100


class RemoveFiles(BaseModel):
    """Body of ``POST /checkpoints/{uuid}/remove-files``."""

    model_config = ConfigDict(extra="forbid")

    globs: list[Annotated[str, Field(min_length=1, max_length=1024)]] = Field(
        max_length=MAX_GLOBS,
        description="fnmatch patterns on the files' paths in the checkpoint (`*` matches `/` "
        "too); none: nothing is removed, the resources are read again from storage.",
    )


@router.post(
    "/{checkpoint_uuid}/remove-files",
    responses={
        **OWNER_RESPONSES,
        501: {"model": ErrorResponse, "description": "Its storage is not usable here"},
        502: {"model": ErrorResponse, "description": "Its storage failed"},
    },
)
def remove_files(
    checkpoint_uuid: UUID, body: RemoveFiles, database: DatabaseDep, user: CurrentUser
) -> CheckpointPublic:
    """Remove the checkpoint's files matching any of ``globs`` from its storage and record
    what is left as its ``resources`` (``det checkpoint rm``, Determined's
    ``Checkpoint.remove_files``): PARTIALLY_DELETED when some files were removed, DELETED when
    none is left; the experiment's owner or an administrator.
    409, with the reason, for a DELETED checkpoint, one a model version holds or the latest
    of a trial that may still run (when ``globs`` would remove anything)."""
    uuid = str(checkpoint_uuid)
    with database.session() as session:
        checkpoint = checkpoints_repo.get_checkpoint(session, uuid)
        _require_checkpoint_owner(session, checkpoint, user)
        if checkpoint.state.value == "DELETED":
            raise ApiError(409, f"checkpoint {uuid} is DELETED: its files are gone", field="uuid")
        refusal = checkpoints_repo.deletion_refusal(session, checkpoint) if body.globs else None
        if refusal is not None:
            raise ApiError(409, refusal, field="checkpoint_uuid")
        storage = storage_of(session, checkpoint)
    try:
        remaining = _rewrite_without(storage, uuid, body.globs)
    except FileNotFoundError as err:
        raise ApiError(409, f"checkpoint {uuid}: its files are not in storage ({err})") from err
    except OSError as err:
        raise ApiError(502, f"checkpoint {uuid}: its storage failed: {err}") from err
    with database.session(write=True) as session:
        row = checkpoints_repo.get_checkpoint(session, uuid, for_update=True)
        removed = set(row.resources or {}) - set(remaining)
        row.resources = remaining
        if not remaining:
            checkpoints_repo.mark_checkpoints_deleted(session, [uuid])
        elif removed:
            checkpoints_repo.mark_checkpoints_partially_deleted(session, [uuid])
    with database.session() as session:
        return describe_checkpoint(session, uuid)


def _matches(path: str, globs: list[str]) -> bool:
    return any(fnmatch.fnmatchcase(path, glob) for glob in globs)


def _rewrite_without(storage: StorageManager, uuid: str, globs: list[str]) -> dict[str, int]:
    """Remove the checkpoint's files matching ``globs`` from ``storage``; the files left,
    {relative path: bytes}. A path here (shared_fs) loses the files in place; an object
    store's checkpoint is read, and written again without them."""
    if isinstance(storage, SharedFSStorage):
        directory = storage.path_of(uuid)
        if not directory.is_dir():
            raise FileNotFoundError(str(directory))
        for path in _files(directory):
            if _matches(path.relative_to(directory).as_posix(), globs):
                path.unlink()
        return {p.relative_to(directory).as_posix(): p.stat().st_size for p in _files(directory)}
    with tempfile.TemporaryDirectory(prefix="pedl-rm-") as tmp:
        copy = Path(tmp) / uuid
        with storage.restore_path(uuid) as source:
            shutil.copytree(source, copy)
        doomed = [p for p in _files(copy) if _matches(p.relative_to(copy).as_posix(), globs)]
        for path in doomed:
            path.unlink()
        kept = {p.relative_to(copy).as_posix(): p.stat().st_size for p in _files(copy)}
        if doomed:
            storage.delete(uuid)
            if kept:
                with storage.store_path(uuid) as target:
                    shutil.copytree(copy, target, dirs_exist_ok=True)
        return kept


def _files(directory: Path) -> list[Path]:
    return sorted(p for p in directory.rglob("*") if p.is_file())
