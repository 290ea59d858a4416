"""``/api/v1/experiments``: create, list, inspect, delete, and pause/activate/cancel/kill."""

from __future__ import annotations

import base64
import binascii
import dataclasses
import logging
import math
from collections.abc import Callable, Sequence
from datetime import UTC, date, datetime, timedelta
from typing import IO, Annotated, Any, Literal, cast

import anyio.to_thread
import pydantic_core
from fastapi import APIRouter, Query, Request, Response
from fastapi.responses import JSONResponse
from pydantic import BaseModel, Field, field_validator
from sqlalchemy.orm import Session

from pedl.config import MAX_NAME, ConfigError, parse_config
from pedl.config._overrides import overridden_document
from pedl.config._templates import merge_template
from pedl.db import checkpoints as checkpoints_repo
from pedl.db import experiments as experiments_repo
from pedl.db import logs as logs_repo
from pedl.db import metrics as metrics_repo
from pedl.db import templates as templates_repo
from pedl.db import trials as trials_repo
from pedl.master._settings import MasterSettings
from pedl.master.api._auth import (
    OWNER_RESPONSES,
    USER_AUTH_RESPONSES,
    CurrentUser,
    ExperimentReader,
    UserPrincipal,
    require_owner,
    require_user,
)
from pedl.master.api._config import (
    refuse_unlaunchable,
    resolve_warm_start,
    validate_experiment_config,
)
from pedl.master.api._convert import checkpoint_public, trial_public_document
from pedl.master.api._deps import (
    MAX_INT_ID,
    DatabaseDep,
    ExperimentId,
    Limit,
    Offset,
    ReadSession,
    WriteSession,
)
from pedl.master.api._errors import ERROR_RESPONSES, ApiError
from pedl.master.api._experiment_settings import (
    CheckpointStoragePatch,
    ResourcesPatch,
    apply_settings,
    settings_changes,
    stored_config,
)
from pedl.master.api._implied_searcher import with_implied_searcher
from pedl.master.api._original_config import shown_original_config
from pedl.master.api._project_choice import project_for_new_experiment
from pedl.master.api._schemas import (
    CheckpointPublic,
    ErrorIssue,
    ExperimentCreated,
    ExperimentPatch,
    ExperimentPublic,
    Page,
    TrialListItem,
)
from pedl.master.api._upload import (
    CREATE_REQUEST_BODY,
    ExperimentUpload,
    read_experiment_upload,
)
from pedl.master.orchestrator import Orchestrator
from pedl.model_def import ArchiveLimitError, ModelDefError, check_archive
from pedl.storage import UnsupportedStorageError, delete_snapshots, make_storage
from pedl.vocabulary import CheckpointState, ExperimentAction, ExperimentState, TrialState

logger = logging.getLogger(__name__)

router = APIRouter(
    prefix="/experiments",
    tags=["experiments"],
    responses={**ERROR_RESPONSES, **USER_AUTH_RESPONSES},
)


@router.post("", status_code=201, openapi_extra={"requestBody": CREATE_REQUEST_BODY})
async def create_experiment(
    request: Request, session: WriteSession, user: CurrentUser
) -> ExperimentCreated:
    """Validate the config and store a new experiment with its model definition.

    The body is ``multipart/form-data`` (``config``, the ``model_definition`` archive as a
    file part, ``activate``; the archive is spooled to a temporary file as it arrives and
    checked from there), or JSON with the archive in base64 (see
    :mod:`pedl.master.api._upload`). The caller was checked before the body was read (401
    at once, see :class:`~pedl.master.api._auth.BodyAuth`).

    A config error answers 422 listing every problem (``error.issues``, each with its field
    path under ``config`` and YAML line), as does a setting PEDL cannot run (a searcher it
    lacks, ...) or a ``resources.slots_per_trial`` this cluster can never provide, as does one
    whose trials this master could never start (its trial user cannot run their Python,
    ``PEDL_TRIAL_PYTHON`` or its own, or reach their checkpoint storage), naming the ways
    out. A config
    without ``checkpoint_storage`` gets the master's ``checkpoint_dir`` (shared_fs). The
    experiment starts ACTIVE, or PAUSED when ``activate`` is false. ``warnings`` lists, in
    one message, the Determined fields the config sets that PEDL ignores.

    With ``template``, that template (``/templates``) is merged under the config before it is
    validated, as Determined merges one (the config's own values win): here, on the master,
    so that the template's secrets, masked wherever a template is shown, reach the experiment
    as they were stored. 404 when there is no such template.
    """
    settings = request.app.state.settings
    assert isinstance(settings, MasterSettings)
    upload = await read_experiment_upload(
        request, max_part_bytes=settings.upload_bytes, max_json_depth=settings.max_json_depth
    )
    try:
        orchestrator = getattr(request.app.state, "orchestrator", None)
        return await anyio.to_thread.run_sync(
            _create_experiment, upload, session, user, settings, orchestrator
        )
    finally:
        await upload.close()


def _create_experiment(
    upload: ExperimentUpload,
    session: Session,
    user: UserPrincipal,
    settings: MasterSettings,
    orchestrator: object,
) -> ExperimentCreated:
    """:func:`create_experiment`'s checks and writes, on a worker thread."""
    if upload.archive_file is not None:
        model_definition = _checked_archive_file(upload.archive_file, settings)
    else:
        model_definition = _checked_model_definition(upload.base64_archive or "", settings)
    source = upload.config
    if upload.template is not None:
        source = _with_template(session, source, upload.template)
    implied = with_implied_searcher(source, model_definition)
    config = validate_experiment_config(
        implied,
        default_checkpoint_dir=settings.checkpoint_dir,
        storage_roots=settings.allowed_storage_roots,
    )
    if implied is not source and isinstance(source, str):
        config = dataclasses.replace(config, text=source)  # the config as the user wrote it
    config = resolve_warm_start(session, config)
    if isinstance(orchestrator, Orchestrator):
        impossible = orchestrator.impossible_placement(config.config)
        if impossible is not None:
            message = f"the trials of this experiment can never be scheduled: {impossible}"
            where = "config.resources.slots_per_trial"
            raise ApiError(
                422, message, field=where, issues=[ErrorIssue(field=where, message=impossible)]
            )
    refuse_unlaunchable(orchestrator, config.config)
    project_id = project_for_new_experiment(
        session, upload.project_id, config.config.workspace, config.config.project
    )
    experiment = experiments_repo.create_experiment(
        session,
        config=config.document,
        config_text=config.text,
        model_definition=model_definition,
        owner=user.username,
        activate=upload.activate,
        name=config.name,
        description=config.config.description,
        labels=config.config.labels,
        searcher_metric=config.searcher_metric,
        smaller_is_better=config.smaller_is_better,
        project_id=project_id,
    )
    created = ExperimentCreated.model_validate(experiment)
    return created.model_copy(update={"warnings": config.warnings})


def _with_template(
    session: Session, source: str | dict[str, Any], name: str
) -> str | dict[str, Any]:
    """``source`` with the template ``name`` (as stored: its secrets unmasked) merged under it;
    404 if there is none. YAML text that is not a mapping is left for the config's validation
    to refuse (with its lines)."""
    template = templates_repo.get_template(session, name)
    if isinstance(source, str):
        try:
            document = overridden_document(source, ())
        except ConfigError:
            return source
        if not isinstance(document, dict):
            return source
        source = document
    return merge_template(source, template.config)


def _checked_archive_file(file: IO[bytes], settings: MasterSettings) -> bytes:
    """The archive of a multipart upload, spooled to ``file``: checked from the file as
    :func:`_checked_model_definition` checks one (its size first, then header by header),
    and only then read, for the database to store."""
    file.seek(0)
    _checked_archive(file, settings)
    file.seek(0)
    return file.read()


_ARCHIVE_SETTINGS = {
    "max_bytes": "max_model_definition_bytes",
    "max_unpacked_bytes": "max_model_definition_unpacked_bytes",
    "max_members": "max_model_definition_members",
    "max_header_bytes": "max_model_definition_header_bytes",
    "max_path_chars": "max_model_definition_path_chars",
}
"""The master setting behind each limit of :func:`pedl.model_def.check_archive`."""


def _checked_model_definition(value: str, settings: MasterSettings) -> bytes:
    """The archive of a base64 ``model_definition``, checked member by member while it is
    decompressed against the master's ``max_model_definition_*`` settings (no escaping path,
    link or device either); 422 otherwise, naming the setting of a limit it passes. Checked
    here rather than in the body's schema, which cannot see the settings: on a worker thread,
    before the request's session touches the database."""
    try:
        archive = base64.b64decode(value, validate=True)
    except (binascii.Error, ValueError) as err:
        raise _invalid_model_definition("not valid base64") from err
    _checked_archive(archive, settings)
    return archive


def _checked_archive(archive: bytes | IO[bytes], settings: MasterSettings) -> None:
    """Check ``archive`` (bytes or a binary file) against the master's
    ``max_model_definition_*`` settings (see :func:`_checked_model_definition`)."""
    try:
        check_archive(
            archive,
            max_bytes=settings.max_model_definition_bytes,
            max_unpacked_bytes=settings.max_model_definition_unpacked_bytes,
            max_members=settings.max_model_definition_members,
            max_header_bytes=settings.max_model_definition_header_bytes,
            max_path_chars=settings.max_model_definition_path_chars,
        )
    except ArchiveLimitError as err:
        setting = _ARCHIVE_SETTINGS[err.limit]
        raise _invalid_model_definition(f"{err} (the master's {setting} setting)") from err
    except ModelDefError as err:
        raise _invalid_model_definition(str(err)) from err


def _invalid_model_definition(problem: str) -> ApiError:
    where = "body.model_definition"
    return ApiError(
        422,
        f"invalid request: {where}: {problem}",
        field=where,
        issues=[ErrorIssue(field=where, message=problem)],
    )


def _sort_key(value: str, allowed: tuple[str, ...]) -> tuple[str, bool]:
    """``(column, descending)`` of a ``sort`` query value (``-`` prefix: descending)."""
    column = value.removeprefix("-")
    if column not in allowed:
        choices = ", ".join(allowed)
        raise ApiError(
            422,
            f"cannot sort by {column!r}: use one of {choices} (- prefix: descending)",
            field="sort",
        )
    return column, value.startswith("-")


@router.get("", dependencies=[require_user])
def list_experiments(
    session: ReadSession,
    state: Annotated[list[ExperimentState] | None, Query(description="Keep these states.")] = None,
    name: Annotated[
        str | None, Query(max_length=512, description="Keep names containing this (any case).")
    ] = None,
    description: Annotated[
        str | None,
        Query(max_length=512, description="Keep descriptions containing this (any case)."),
    ] = None,
    owner: Annotated[
        str | None, Query(max_length=128, description="Keep owners containing this (any case).")
    ] = None,
    label: Annotated[
        list[Annotated[str, Query(max_length=255)]] | None,
        Query(max_length=100, description="Keep experiments with every one of these labels."),
    ] = None,
    sort: Annotated[
        str,
        Query(
            max_length=32,
            description="id, name, description, owner, state, progress, best_validation, "
            "created_at, ended_at, labels (the alphabetically first) or duration (the end, "
            "or now, minus the creation); a - prefix sorts descending.",
        ),
    ] = "-id",
    archived: Annotated[
        bool | None,
        Query(
            description="true: only archived experiments; false: only the others; left out: both."
        ),
    ] = None,
    range_: Annotated[
        list[Annotated[str, Query(max_length=MAX_FILTER_CHARS)]] | None,
        Query(
            alias="range",
            max_length=MAX_EXPERIMENT_RANGES,
            description="COLUMN:LOW..HIGH (either end may be left out): keep experiments whose "
            "COLUMN is within it; COLUMN is id, progress (0 to 1), best_validation, duration "
            "(seconds) or created_at (ISO 8601 dates or datetimes, UTC unless an offset is "
            "given; a bare date as the high bound takes in that whole day). Several: all of "
            "them.",
        ),
    ] = None,
    project_id: Annotated[
        int | None, Query(ge=1, le=MAX_INT_ID, description="Only this project's experiments.")
    ] = None,
    workspace_id: Annotated[
        int | None,
        Query(
            ge=1, le=MAX_INT_ID, description="Only the experiments of this workspace's projects."
        ),
    ] = None,
    limit: Limit = 100,
    offset: Offset = 0,
) -> Page[ExperimentPublic]:
    """Experiments, newest first unless ``sort`` says otherwise (those without a value for
    the sort column last), filtered by ``state``, ``name``, ``description``, ``owner``,
    ``label``, ``archived``, ``range``, ``project_id`` and ``workspace_id``. 422 naming the
    parameter for a bad one."""
    column, descending = _sort_key(sort, experiments_repo.EXPERIMENT_SORTS)
    rows, total = experiments_repo.list_experiments(
        session,
        states=state,
        name=name,
        description=description,
        owner=owner,
        labels=label or (),
        archived=archived,
        ranges=[_experiment_range(text) for text in range_ or ()],
        project_id=project_id,
        workspace_id=workspace_id,
        sort=cast(experiments_repo.ExperimentSort, column),
        descending=descending,
        limit=limit,
        offset=offset,
    )
    return Page[ExperimentPublic](
        items=[ExperimentPublic.model_validate(row) for row in rows],
        total=total,
        offset=offset,
        limit=limit,
    )


MAX_EXPERIMENT_RANGES = len(experiments_repo.EXPERIMENT_RANGE_COLUMNS)
"""At most this many ``range`` filters in one experiments request (one per column)."""


def _experiment_range(text: str) -> experiments_repo.ExperimentRange:
    """A ``range`` filter of the experiment list, ``COLUMN:LOW..HIGH``; 422 when it is not."""
    name, colon, bounds = text.partition(":")
    low_text, dots, high_text = bounds.partition("..")
    if not colon or not dots:
        raise _bad_filter("range", f"{text!r} is not COLUMN:LOW..HIGH")
    if name not in experiments_repo.EXPERIMENT_RANGE_COLUMNS:
        choices = ", ".join(experiments_repo.EXPERIMENT_RANGE_COLUMNS)
        raise _bad_filter("range", f"no column {name!r}: use one of {choices}")
    low: float | datetime | None
    high: float | datetime | None
    if name == "created_at":
        start, end = _instant(low_text, text, end=False), _instant(high_text, text, end=True)
        inverted = start is not None and end is not None and start > end
        low, high = start, end
    else:
        small, big = _bound(low_text, text), _bound(high_text, text)
        inverted = small is not None and big is not None and small > big
        low, high = small, big
    if low is None and high is None:
        raise _bad_filter("range", f"{text!r} has neither a low nor a high bound")
    if inverted:
        raise _bad_filter("range", f"{text!r}: the low bound is above the high one")
    column = cast(experiments_repo.ExperimentRangeColumn, name)
    return experiments_repo.ExperimentRange(column, low, high)


def _instant(text: str, whole: str, *, end: bool) -> datetime | None:
    """An ISO 8601 date or datetime bound (UTC unless it says otherwise); a bare date as the
    ``end`` of a range means the end of that day."""
    text = text.strip()
    if not text:
        return None
    try:
        if len(text) == len("YYYY-MM-DD"):
            day = date.fromisoformat(text)
            start = datetime(day.year, day.month, day.day, tzinfo=UTC)
            return start + timedelta(days=1, microseconds=-1) if end else start
        instant = datetime.fromisoformat(text)
    except ValueError:
        raise _bad_filter(
            "range", f"{whole!r}: {text!r} is not an ISO 8601 date or datetime"
        ) from None
    return instant if instant.tzinfo else instant.replace(tzinfo=UTC)


@router.get("/{experiment_id}", dependencies=[require_user])
def get_experiment(experiment_id: ExperimentId, session: ReadSession) -> ExperimentPublic:
    """One experiment, with how many of its trials are in each state (``trial_counts``, read
    in the same session: a page shows the experiment's state and its trials' counts as one)
    and its config as submitted (``original_config``)."""
    experiment = experiments_repo.get_experiment(session, experiment_id)
    public = ExperimentPublic.model_validate(experiment)
    public.original_config = shown_original_config(experiment.config_text)
    public.trial_counts = trials_repo.count_by_state(session, experiment_id)
    return public


@router.post("/{experiment_id}/archive", responses=OWNER_RESPONSES)
def archive_experiment(
    experiment_id: ExperimentId, session: WriteSession, user: CurrentUser
) -> ExperimentPublic:
    """Archive an ended experiment (409 before it ends; no-op when archived): lists leave it
    out unless asked for it. Its owner or an administrator only (403)."""
    _check_owner(session, experiment_id, user)
    experiment = experiments_repo.set_archived(session, experiment_id, True)
    return ExperimentPublic.model_validate(experiment)


@router.post("/{experiment_id}/unarchive", responses=OWNER_RESPONSES)
def unarchive_experiment(
    experiment_id: ExperimentId, session: WriteSession, user: CurrentUser
) -> ExperimentPublic:
    """Undo ``archive`` (no-op when not archived). Its owner or an administrator only (403)."""
    _check_owner(session, experiment_id, user)
    experiment = experiments_repo.set_archived(session, experiment_id, False)
    return ExperimentPublic.model_validate(experiment)


MAX_NOTES = 100_000
"""The longest notes an experiment takes (characters)."""
MAX_LOG_RETENTION_DAYS = 32_767
"""det's largest ``--days`` of ``det e set log-retention``."""


class ExperimentEdit(ExperimentPatch):
    """Body of ``PATCH /experiments/{id}``: what to change (a field left out stays)."""

    name: Annotated[str, Field(min_length=1, max_length=MAX_NAME)] | None = Field(
        default=None, description="1 to 512 characters, no NUL; null clears it."
    )
    resources: ResourcesPatch | None = Field(
        default=None, description="max_slots, priority, weight (`det experiment set`)."
    )
    checkpoint_storage: CheckpointStoragePatch | None = Field(
        default=None,
        description="save_experiment_best, save_trial_best, save_trial_latest "
        "(`det experiment set gc-policy`).",
    )
    notes: Annotated[str, Field(max_length=MAX_NOTES)] | None = Field(
        default=None, description=f"At most {MAX_NOTES:,} characters, no NUL; null clears them."
    )
    log_retention_days: Annotated[int, Field(ge=-1, le=MAX_LOG_RETENTION_DAYS)] | None = Field(
        default=None,
        description="Days its trials' logs are kept after it ends, 0 to "
        f"{MAX_LOG_RETENTION_DAYS}; -1 or null: forever (`det e set log-retention`).",
    )

    @field_validator("name", "notes")
    @classmethod
    def _no_nul_in_name(cls, value: str | None) -> str | None:
        if value is not None and "\x00" in value:
            raise ValueError("must not contain NUL characters")
        return value


@router.patch("/{experiment_id}", responses=OWNER_RESPONSES)
def patch_experiment(
    experiment_id: ExperimentId,
    body: ExperimentEdit,
    database: DatabaseDep,
    user: CurrentUser,
    request: Request,
) -> ExperimentPublic:
    """Change an experiment's ``name`` (1 to 512 characters; null clears it),
    ``description`` (at most 10,000 characters; null clears it) and ``labels`` (at most 100,
    each 1 to 255 characters; duplicates dropped, order kept); a field left out stays as it
    is. 422 beyond those limits. Its owner or an administrator only (403). ``notes`` (at
    most 100,000 characters; null clears them) and ``log_retention_days`` (days its trials'
    logs are kept after it ends, 0 to 32,767; -1 or null: forever; the master deletes older
    logs at start and every hour) as Determined's.

    ``resources`` (``max_slots`` 1 to 1024 and at least ``slots_per_trial``, null: no cap;
    ``priority`` 1 to 99; ``weight`` above 0, at most 1,000,000) and ``checkpoint_storage``
    (``save_experiment_best``, ``save_trial_best``, ``save_trial_latest``: 0 to 1,000,000)
    change the stored config, so a restarted master keeps them; a running experiment's
    scheduling and retention use them at once, and an ended experiment's checkpoints that the
    new retention policy does not keep are deleted now (``det experiment set``)."""
    with database.session(write=True) as session:
        _check_owner(session, experiment_id, user)
        changes: dict[str, Any] = {}
        for field in ("name", "description", "notes", "log_retention_days"):
            if field in body.model_fields_set:
                changes[field] = getattr(body, field)
        if "labels" in body.model_fields_set:
            changes["labels"] = body.labels or []
        if changes:
            experiments_repo.update_experiment(session, experiment_id, **changes)
        if "log_retention_days" in changes:  # already past: its logs go now
            logs_repo.delete_expired_logs(session, experiment_id=experiment_id)
        settings = settings_changes(
            stored_config(session, experiment_id), body.resources, body.checkpoint_storage
        )
    if settings:
        orchestrator = getattr(request.app.state, "orchestrator", None)
        apply_settings(database, experiment_id, settings, orchestrator)
    with database.session() as session:
        experiment = experiments_repo.get_experiment(session, experiment_id)
        return ExperimentPublic.model_validate(experiment)


class ExperimentDeleted(BaseModel):
    """Body of ``DELETE /experiments/{id}`` when some stored files could not be removed."""

    files_not_removed: list[str] = Field(
        description="What stayed in storage and why, one line each (the records are gone)."
    )


@router.delete(
    "/{experiment_id}",
    status_code=204,
    responses={
        **OWNER_RESPONSES,
        200: {
            "model": ExperimentDeleted,
            "description": "Deleted, but some stored files could not be removed: which and why",
        },
    },
)
def delete_experiment(
    experiment_id: ExperimentId,
    session: WriteSession,
    user: CurrentUser,
    delete_checkpoints: Annotated[
        bool, Query(description="Also remove the checkpoints' files from storage.")
    ] = True,
) -> Response:
    """Delete an ended experiment and all its records (409 while it has not ended), and
    (unless ``delete_checkpoints=false``) its checkpoints' files and its trials' TensorBoard
    event files from its checkpoint storage, as ``det experiment delete`` does. Its owner or an
    administrator only (403).

    204 when everything is gone. Files that cannot be removed (storage unreachable, a path
    that is not the checkpoint's directory) are left and named with the reason in a 200
    answer's ``files_not_removed`` (and the master's log); the records go anyway.
    """
    _check_owner(session, experiment_id, user)
    config = experiments_repo.get_experiment(session, experiment_id).config
    uuids = experiments_repo.stored_checkpoint_uuids(session, experiment_id)
    trial_ids = [trial.id for trial in trials_repo.all_trials(session, experiment_id)]
    experiments_repo.delete_experiment(session, experiment_id)
    if not delete_checkpoints:
        return Response(status_code=204)
    left = _remove_stored_files(config, uuids, trial_ids)
    for line in left:
        logger.warning("experiment %d: %s", experiment_id, line)
    if not left:
        return Response(status_code=204)
    if len(left) > MAX_REPORTED_LEFTOVERS:
        more = len(left) - MAX_REPORTED_LEFTOVERS
        left = [*left[:MAX_REPORTED_LEFTOVERS], f"... and {more} more (see the master's log)"]
    return JSONResponse(ExperimentDeleted(files_not_removed=left).model_dump())


MAX_REPORTED_LEFTOVERS = 100
"""At most this many lines in ``files_not_removed`` (then one line counting the rest)."""


def _remove_stored_files(
    config: dict[str, Any], uuids: list[str], trial_ids: list[int]
) -> list[str]:
    """Remove the checkpoints' and TensorBoard snapshots' files; what stayed, one line each."""
    try:
        storage = make_storage(parse_config(config).checkpoint_storage)
    except (ConfigError, UnsupportedStorageError) as err:
        return [f"no checkpoint files removed: the checkpoint storage is unusable: {err}"]
    left: list[str] = []
    for uuid in uuids:
        try:
            storage.delete(uuid)
        except Exception as err:  # one unreachable checkpoint must not keep the others
            left.append(f"checkpoint {uuid}: {type(err).__name__}: {err}")
    for trial_id in trial_ids:
        try:
            delete_snapshots(storage, trial_id)
        except Exception as err:
            left.append(f"trial {trial_id}'s TensorBoard files: {type(err).__name__}: {err}")
    return left


class TensorBoardFilesDeleted(BaseModel):
    """Answer of ``DELETE /experiments/{id}/tensorboard-files``."""

    snapshots_deleted: int = Field(
        description="How many stored uploads of the trials' event files were removed."
    )
    files_not_removed: list[str] = Field(
        default_factory=list,
        description="What stayed in storage and why, one line each (empty: all gone).",
    )


@router.delete("/{experiment_id}/tensorboard-files", responses=OWNER_RESPONSES)
def delete_tensorboard_files(
    experiment_id: ExperimentId, session: ReadSession, user: CurrentUser
) -> TensorBoardFilesDeleted:
    """Delete the TensorBoard event files its trials uploaded to its checkpoint storage
    (``det experiment delete-tb-files``; its checkpoints, metrics and records stay). 409 while
    it has not ended (its trials still write them). A TensorBoard already running keeps what
    it fetched; a new one shows the metrics only. Its owner or an administrator only (403)."""
    _check_owner(session, experiment_id, user)
    experiment = experiments_repo.get_experiment(session, experiment_id)
    if not experiment.state.is_terminal:
        raise ApiError(
            409,
            f"experiment {experiment_id} is {experiment.state.value}: its trials still write "
            "TensorBoard files; delete them once it has ended",
        )
    try:
        storage = make_storage(parse_config(experiment.config).checkpoint_storage)
    except (ConfigError, UnsupportedStorageError) as err:
        raise ApiError(409, f"the experiment's checkpoint storage is unusable: {err}") from err
    deleted, left = 0, []
    for trial in trials_repo.all_trials(session, experiment_id):
        try:
            deleted += delete_snapshots(storage, trial.id)
        except Exception as err:  # one unreachable trial's files must not keep the others
            left.append(f"trial {trial.id}'s TensorBoard files: {type(err).__name__}: {err}")
    for line in left:
        logger.warning("experiment %d: %s", experiment_id, line)
    return TensorBoardFilesDeleted(snapshots_deleted=deleted, files_not_removed=left)


@router.get(
    "/{experiment_id}/model_definition",
    response_class=Response,
    responses={200: {"content": {"application/gzip": {}}, "description": "The .tar.gz archive"}},
)
def get_model_definition(
    experiment_id: ExperimentId, session: ReadSession, reader: ExperimentReader
) -> Response:
    """The model definition archive exactly as submitted (``application/gzip``), for a
    signed-in user or with the token of one of the experiment's trials."""
    definition = experiments_repo.get_model_definition(session, experiment_id)
    return Response(
        content=definition.archive,
        media_type="application/gzip",
        headers={
            "Content-Disposition": f'attachment; filename="experiment-{experiment_id}.tar.gz"',
            "ETag": f'"{definition.sha256}"',
        },
    )


MAX_TRIAL_FILTERS = 20
"""At most this many ``range`` and this many ``value`` filters in one trials request."""
MAX_FILTER_CHARS = 300
"""The longest ``sort``, ``range`` or ``value`` parameter of a trials request."""

_TRIAL_SORT_HELP = (
    "id, state, outcome, total_batches, best_validation, restarts, created_at, ended_at, "
    "duration (the end, or now, minus the creation), hparams.NAME (a hyperparameter the "
    "config declares; nested ones by their dotted name; numbers before strings and "
    "booleans) or metrics.NAME (the trial's latest validation value of a metric: the one "
    "in its validation with the most batches that has a number for it); a - prefix sorts "
    "descending."
)


@router.get(
    "/{experiment_id}/trials", response_model=Page[TrialListItem], dependencies=[require_user]
)
async def list_experiment_trials(
    experiment_id: ExperimentId,
    database: DatabaseDep,
    state: Annotated[list[TrialState] | None, Query(description="Keep these states.")] = None,
    sort: Annotated[str, Query(max_length=MAX_FILTER_CHARS, description=_TRIAL_SORT_HELP)] = "id",
    range_: Annotated[
        list[Annotated[str, Query(max_length=MAX_FILTER_CHARS)]] | None,
        Query(
            alias="range",
            max_length=MAX_TRIAL_FILTERS,
            description="COLUMN:LOW..HIGH (either end may be left out): keep trials whose "
            "COLUMN is a number within it; COLUMN is id, total_batches, best_validation, "
            "restarts, hparams.NAME or metrics.NAME (the latest value, as for sort). "
            "Several: all of them.",
        ),
    ] = None,
    value: Annotated[
        list[Annotated[str, Query(max_length=MAX_FILTER_CHARS)]] | None,
        Query(
            max_length=MAX_TRIAL_FILTERS,
            description="hparams.NAME:VALUE: keep trials whose hyperparameter is VALUE (a "
            "string's text, true or false, or a number equal to VALUE read as one). "
            "Several for one NAME: any of them; for several names: all of them.",
        ),
    ] = None,
    limit: Limit = 100,
    offset: Offset = 0,
) -> Response:
    """The experiment's trials in creation order, or sorted by ``sort`` (then by id; trials
    without a value last), filtered by ``state``, ``range`` and ``value``; each with the
    metrics of its latest validation. 422 naming the parameter for an unknown column, a
    hyperparameter the experiment's config does not declare or a bad bound."""
    descending = sort.startswith("-")
    sort_name = sort.removeprefix("-")
    # Polled by dashboards while trials report, so it is cheap: one worker-thread hop holding
    # one short read session, the trials read as JSON-ready documents (no ORM objects) and
    # serialized in one call (P5b in bench/RESULTS.md).

    def read() -> bytes:
        with database.session() as session:
            columns = _TrialColumns(session, experiment_id)
            sort_column = columns.parse(sort_name, "sort", plain=trials_repo.TRIAL_SORTS)
            ranges = [columns.range(text) for text in range_ or ()]
            values = columns.values(value or ())
            documents, total = trials_repo.list_trial_documents(
                session,
                experiment_id,
                states=state,
                sort=sort_column,
                descending=descending,
                ranges=ranges,
                hparam_values=values,
                limit=limit,
                offset=offset,
            )
        items = [
            {**trial_public_document(d), "latest_validation": d["latest_validation"]}
            for d in documents
        ]
        page = {"items": items, "total": total, "offset": offset, "limit": limit}
        return pydantic_core.to_json(page, inf_nan_mode="null")

    return Response(await anyio.to_thread.run_sync(read), media_type="application/json")


class _TrialColumns:
    """Reads the columns a trials request names (``sort``, ``range``, ``value``) against the
    experiment: 422 naming the parameter for one it does not have."""

    def __init__(self, session: Session, experiment_id: int) -> None:
        self._session = session
        self._experiment_id = experiment_id
        self._hparams: dict[str, tuple[str, ...]] | None = None

    def _hparam_path(self, name: str, field: str) -> tuple[str, ...]:
        if self._hparams is None:
            config = experiments_repo.get_experiment(self._session, self._experiment_id).config
            self._hparams = trials_repo.hparam_paths(config.get("hyperparameters"))
        path = self._hparams.get(name)
        if path is None:
            known = ", ".join(sorted(self._hparams)[:50]) or "none"
            raise _bad_filter(
                field,
                f"experiment {self._experiment_id} has no hyperparameter {name!r} "
                f"(its hyperparameters: {known})",
            )
        return path

    def parse(self, name: str, field: str, *, plain: tuple[str, ...]) -> trials_repo.TrialColumn:
        if name.startswith(trials_repo.HPARAM_PREFIX):
            return trials_repo.HparamColumn(
                self._hparam_path(name.removeprefix(trials_repo.HPARAM_PREFIX), field)
            )
        if name.startswith(trials_repo.METRIC_PREFIX):
            metric = name.removeprefix(trials_repo.METRIC_PREFIX)
            if not 0 < len(metric) <= 256 or "\x00" in metric or '"' in metric:
                raise _bad_filter(
                    field, f'{name!r} names no metric (1 to 256 characters, no " or NUL)'
                )
            return trials_repo.MetricColumn(metric)
        if name not in plain:
            choices = ", ".join(plain)
            raise _bad_filter(
                field,
                f"no column {name!r}: use one of {choices}, hparams.NAME or metrics.NAME"
                + (" (- prefix: descending)" if field == "sort" else ""),
            )
        return name

    def range(self, text: str) -> trials_repo.TrialRange:
        name, colon, bounds = text.rpartition(":")
        low_text, dots, high_text = bounds.partition("..")
        if not colon or not dots:
            raise _bad_filter("range", f"{text!r} is not COLUMN:LOW..HIGH")
        column = self.parse(name, "range", plain=trials_repo.TRIAL_RANGE_COLUMNS)
        low, high = _bound(low_text, text), _bound(high_text, text)
        if low is None and high is None:
            raise _bad_filter("range", f"{text!r} has neither a low nor a high bound")
        if low is not None and high is not None and low > high:
            raise _bad_filter("range", f"{text!r}: the low bound is above the high one")
        return trials_repo.TrialRange(column, low, high)

    def values(self, texts: Sequence[str]) -> list[trials_repo.HparamValues]:
        by_path: dict[tuple[str, ...], list[str]] = {}
        for text in texts:
            name, colon, wanted = text.partition(":")
            if not colon or not name.startswith(trials_repo.HPARAM_PREFIX):
                raise _bad_filter("value", f"{text!r} is not hparams.NAME:VALUE")
            path = self._hparam_path(name.removeprefix(trials_repo.HPARAM_PREFIX), "value")
            by_path.setdefault(path, []).append(wanted)
        return [trials_repo.HparamValues(p, tuple(v)) for p, v in by_path.items()]


def _bound(text: str, whole: str) -> float | None:
    if not text.strip():
        return None
    try:
        number = float(text)
    except ValueError:
        number = math.nan
    if not math.isfinite(number):
        raise _bad_filter("range", f"{whole!r}: {text!r} is not a finite number")
    return number


def _bad_filter(field: str, problem: str) -> ApiError:
    return ApiError(
        422,
        f"invalid request: {field}: {problem}",
        field=field,
        issues=[ErrorIssue(field=field, message=problem)],
    )


@router.get("/{experiment_id}/checkpoints", dependencies=[require_user])
def list_experiment_checkpoints(
    experiment_id: ExperimentId,
    session: ReadSession,
    state: Annotated[list[CheckpointState] | None, Query(description="Keep these states.")] = None,
    sort: Annotated[
        Literal["created", "best"],
        Query(description="`created`: oldest first; `best`: best searcher metric first."),
    ] = "created",
    limit: Limit = 100,
    offset: Offset = 0,
) -> Page[CheckpointPublic]:
    """The checkpoints of all the experiment's trials, oldest first, or best first by the
    searcher metric of the validation at their batch count (``sort=best``: the top N are
    ``sort=best&state=COMPLETED&limit=N``; checkpoints without a value come last)."""
    experiment = experiments_repo.get_experiment(session, experiment_id)
    rows, total = checkpoints_repo.list_checkpoints(
        session,
        experiment_id=experiment_id,
        states=state,
        best_first=experiment.smaller_is_better if sort == "best" else None,
        limit=limit,
        offset=offset,
    )
    items = [
        checkpoint_public(
            checkpoint,
            exp_id,
            metrics_repo.validation_metrics_at(
                session, checkpoint.trial_id, checkpoint.total_batches
            ),
        )
        for checkpoint, exp_id in rows
    ]
    return Page[CheckpointPublic](items=items, total=total, offset=offset, limit=limit)


def _check_owner(session: WriteSession, experiment_id: int, user: CurrentUser) -> None:
    owner = experiments_repo.get_experiment(session, experiment_id).owner
    require_owner(user, owner, f"experiment {experiment_id}")


def _action_route(
    action: ExperimentAction,
) -> Callable[[int, WriteSession, CurrentUser], ExperimentPublic]:
    def handler(
        experiment_id: ExperimentId, session: WriteSession, user: CurrentUser
    ) -> ExperimentPublic:
        _check_owner(session, experiment_id, user)
        experiment = experiments_repo.apply_experiment_action(session, experiment_id, action)
        return ExperimentPublic.model_validate(experiment)

    handler.__name__ = f"{action.value}_experiment"
    handler.__doc__ = _ACTION_DOCS[action] + " Its owner or an administrator only (403)."
    return handler


_ACTION_DOCS = {
    ExperimentAction.PAUSE: "Pause an ACTIVE experiment (no-op if PAUSED; 409 otherwise).",
    ExperimentAction.ACTIVATE: "Resume a PAUSED experiment (no-op if ACTIVE; 409 otherwise).",
    ExperimentAction.CANCEL: (
        "Stop an experiment gracefully: trials checkpoint and exit, then it is CANCELED "
        "(no-op while stopping; 409 once ended)."
    ),
    ExperimentAction.KILL: (
        "Stop an experiment at once, without checkpointing (no-op while being killed; 409 "
        "once ended)."
    ),
}

for _action in ExperimentAction:
    router.add_api_route(
        f"/{{experiment_id}}/{_action.value}",
        _action_route(_action),
        methods=["POST"],
        name=f"{_action.value}_experiment",
        summary=f"{_action.value.capitalize()} an experiment",
        responses=OWNER_RESPONSES,
    )
