"""Checkpoints in a directory of a (possibly shared) file system."""

from __future__ import annotations

import contextlib
import os
import shutil
import time
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
        """Remove the checkpoint's directory; OSError (saying which path) if it stays."""
        path = self.path_of(storage_id)
        with contextlib.suppress(FileNotFoundError):  # gone already, or removed meanwhile
            shutil.rmtree(path)
        if path.exists() or path.is_symlink():
            raise OSError(f"checkpoint {storage_id}'s files stay in {path}: not all removed")

    def exists(self, storage_id: str) -> bool:
        return self.path_of(storage_id).is_dir()

    def delete_torn_uploads(self, older_than: float) -> list[str]:
        """The ``.tmp-<id>-*`` directories of killed writers, untouched for ``older_than``
        seconds (by the newest modification time of anything in them)."""
        if not self.base_path.is_dir():
            return []
        cutoff = time.time() - older_than
        torn = []
        for tmp in self.base_path.glob(".tmp-*"):
            if not tmp.is_dir() or _newest_mtime(tmp) > cutoff:
                continue
            shutil.rmtree(tmp, ignore_errors=True)
            torn.append(tmp.name[len(".tmp-") :].rsplit("-", 1)[0])
        return sorted(torn)


def _newest_mtime(directory: Path) -> float:
    newest = directory.stat().st_mtime
    for root, dirs, files in os.walk(directory):
        for name in [*dirs, *files]:
            with contextlib.suppress(OSError):
                newest = max(newest, (Path(root) / name).stat().st_mtime)
    return newest
