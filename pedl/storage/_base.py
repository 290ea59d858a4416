"""The contract every checkpoint storage backend keeps."""

from __future__ import annotations

import abc
import contextlib
import os
from pathlib import Path


class UnsupportedStorageError(ValueError):
    """The config names a storage type this installation cannot use."""


class StorageManager(abc.ABC):
    """Stores and fetches checkpoint directories by id (a uuid).

    Guarantees a backend must keep:

    - ``store_path(id)`` yields an empty local directory; when the block exits normally the
      directory's files become the checkpoint ``id`` atomically: a reader never sees a partly
      written checkpoint, and a crash inside the block leaves no checkpoint ``id`` behind.
      When the block raises, nothing is stored.
    - ``restore_path(id)`` yields a local directory holding exactly the stored files; it raises
      ``FileNotFoundError`` for an unknown id. Callers must not modify it.
    - Methods may be called from several threads; distinct ids never interfere.
    """

    @abc.abstractmethod
    def store_path(self, storage_id: str) -> contextlib.AbstractContextManager[Path]: ...

    @abc.abstractmethod
    def restore_path(self, storage_id: str) -> contextlib.AbstractContextManager[Path]: ...

    @abc.abstractmethod
    def delete(self, storage_id: str) -> None:
        """Delete a stored checkpoint; deleting an unknown id is not an error."""

    @abc.abstractmethod
    def exists(self, storage_id: str) -> bool: ...

    @abc.abstractmethod
    def location(self, storage_id: str) -> str:
        """Where checkpoint ``storage_id``'s files are, for people: a local path or a URL."""

    def delete_torn_uploads(self, older_than: float) -> list[str]:
        """Delete what uploads that never finished left behind (a process killed inside
        ``store_path``): files of ids that are not checkpoints, of which nothing was written
        for ``older_than`` seconds (so an upload still going on is left alone). Returns those
        ids, sorted. A backend with nothing to collect keeps this default."""
        return []


def check_storage_id(storage_id: str) -> None:
    """Raise ValueError unless ``storage_id`` is one path segment a backend may use as a name
    (not empty, no separator, not hidden: so it cannot escape the store or hit its own files)."""
    if not storage_id or "/" in storage_id or "\\" in storage_id or storage_id.startswith("."):
        raise ValueError(f"invalid checkpoint id {storage_id!r}")


def list_resources(directory: Path) -> dict[str, int]:
    """Every file under ``directory`` as a relative POSIX path mapped to its size in bytes."""
    resources: dict[str, int] = {}
    for root, _dirs, files in os.walk(directory):
        for name in files:
            path = Path(root) / name
            resources[path.relative_to(directory).as_posix()] = path.stat().st_size
    return dict(sorted(resources.items()))
