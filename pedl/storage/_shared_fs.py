"""Checkpoints in a directory of a (possibly shared) file system."""

from __future__ import annotations

import contextlib
import os
import shutil
import uuid
from collections.abc import Iterator
from pathlib import Path

from pedl.storage._base import StorageManager, check_storage_id


class SharedFSStorage(StorageManager):
    """Each checkpoint is ``<base>/<id>/``, written under a temporary name and renamed in place."""

    def __init__(self, base_path: str | os.PathLike[str]) -> None:
        self.base_path = Path(base_path).expanduser()

    def path_of(self, storage_id: str) -> Path:
        check_storage_id(storage_id)
        return self.base_path / storage_id

    def location(self, storage_id: str) -> str:
        return str(self.path_of(storage_id))

    @contextlib.contextmanager
    def store_path(self, storage_id: str) -> Iterator[Path]:
        final = self.path_of(storage_id)
        if final.exists():
            raise FileExistsError(f"checkpoint {storage_id} already exists in {self.base_path}")
        self.base_path.mkdir(parents=True, exist_ok=True)
        tmp = self.base_path / f".tmp-{storage_id}-{uuid.uuid4().hex[:8]}"
        tmp.mkdir()
        try:
            yield tmp
        except BaseException:
            shutil.rmtree(tmp, ignore_errors=True)
            raise
        os.rename(tmp, final)

    @contextlib.contextmanager
    def restore_path(self, storage_id: str) -> Iterator[Path]:
        path = self.path_of(storage_id)
        if not path.is_dir():
            raise FileNotFoundError(f"no checkpoint {storage_id} in {self.base_path}")
        yield path

    def delete(self, storage_id: str) -> None:
        shutil.rmtree(self.path_of(storage_id), ignore_errors=True)

    def exists(self, storage_id: str) -> bool:
        return self.path_of(storage_id).is_dir()
