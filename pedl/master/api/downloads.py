"""``/api/v1/checkpoints/{uuid}/files`` and ``.../archive``: a checkpoint's files, read from
its storage.

The storage is the one the experiment config's ``checkpoint_storage`` names (through
:func:`pedl.storage.make_storage`; for a checkpoint that outlived its experiment, the one kept
with it); the files are whatever that storage holds for the
checkpoint's uuid.
"""

from __future__ import annotations

import contextlib
import tarfile
from collections.abc import Iterator
from pathlib import Path
from uuid import UUID

from fastapi import APIRouter
from fastapi.responses import StreamingResponse
from pydantic import BaseModel, Field
from sqlalchemy.orm import Session

from pedl.db import checkpoints as checkpoints_repo
from pedl.master.api._auth import USER_AUTH_RESPONSES, require_user
from pedl.master.api._deps import ReadSession
from pedl.master.api._errors import ERROR_RESPONSES, ApiError
from pedl.master.api.checkpoints import storage_of
from pedl.storage import StorageManager, list_resources

router = APIRouter(
    prefix="/checkpoints",
    tags=["checkpoints"],
    responses={**ERROR_RESPONSES, **USER_AUTH_RESPONSES},
    dependencies=[require_user],
)

CHUNK_BYTES = 1024 * 1024


class CheckpointFiles(BaseModel):
    """Body of ``GET /checkpoints/{uuid}/files``."""

    uuid: str
    files: dict[str, int] = Field(description="Every stored file: {relative path: bytes}.")


def _storage_of(session: Session, checkpoint_uuid: str) -> StorageManager:
    return storage_of(session, checkpoints_repo.get_checkpoint(session, checkpoint_uuid))


def _missing(checkpoint_uuid: str) -> ApiError:
    return ApiError(404, f"the files of checkpoint {checkpoint_uuid} are not in storage")


@router.get("/{checkpoint_uuid}/files")
def list_checkpoint_files(checkpoint_uuid: UUID, session: ReadSession) -> CheckpointFiles:
    """The files of a checkpoint as its storage holds them (404 once deleted from storage)."""
    uuid = str(checkpoint_uuid)
    storage = _storage_of(session, uuid)
    try:
        with storage.restore_path(uuid) as directory:
            files = list_resources(directory)
    except FileNotFoundError as err:
        raise _missing(uuid) from err
    return CheckpointFiles(uuid=uuid, files=files)


@router.get(
    "/{checkpoint_uuid}/archive",
    response_class=StreamingResponse,
    responses={200: {"content": {"application/x-tar": {}}, "description": "A tar archive"}},
)
def download_checkpoint(checkpoint_uuid: UUID, session: ReadSession) -> StreamingResponse:
    """All files of a checkpoint as an uncompressed tar stream (``application/x-tar``),
    members sorted by path, regular files only (404 once deleted from storage)."""
    uuid = str(checkpoint_uuid)
    storage = _storage_of(session, uuid)
    stack = contextlib.ExitStack()
    try:
        directory = stack.enter_context(storage.restore_path(uuid))
        files = list_resources(directory)
    except FileNotFoundError as err:
        stack.close()
        raise _missing(uuid) from err
    except BaseException:
        stack.close()
        raise
    return StreamingResponse(
        _tar_stream(directory, files, stack),
        media_type="application/x-tar",
        headers={
            "Content-Length": str(_tar_size(files)),
            "Content-Disposition": f'attachment; filename="checkpoint-{uuid}.tar"',
        },
    )


def _header(relpath: str, size: int) -> bytes:
    info = tarfile.TarInfo(relpath)
    info.size = size
    info.mode = 0o644
    info.mtime = 0
    return info.tobuf(format=tarfile.PAX_FORMAT, encoding="utf-8", errors="strict")


def _tar_size(files: dict[str, int]) -> int:
    """The exact byte length of the stream :func:`_tar_stream` makes for ``files``."""
    total = 2 * tarfile.BLOCKSIZE
    for relpath, size in files.items():
        total += len(_header(relpath, size)) + size + (-size % tarfile.BLOCKSIZE)
    return total


def _tar_stream(
    directory: Path, files: dict[str, int], stack: contextlib.ExitStack
) -> Iterator[bytes]:
    """A tar archive of ``files`` (relative path -> size, as listed) under ``directory``, in
    chunks; releases the storage's restore directory at the end. Each member carries exactly
    its listed size (a file that shrank meanwhile is zero-padded, one that grew is cut)."""
    with stack:
        for relpath, size in files.items():
            yield _header(relpath, size)
            remaining = size
            with open(directory / relpath, "rb") as file:
                while remaining > 0:
                    chunk = file.read(min(CHUNK_BYTES, remaining))
                    if not chunk:
                        break
                    remaining -= len(chunk)
                    yield chunk
            yield b"\0" * (remaining + (-size % tarfile.BLOCKSIZE))
        yield b"\0" * (2 * tarfile.BLOCKSIZE)
