"""Choosing the storage backend an experiment's ``checkpoint_storage`` names."""

from __future__ import annotations

from pathlib import Path

from pedl.config import (
    CheckpointStorageConfig,
    DirectoryStorageConfig,
    SharedFSStorageConfig,
)
from pedl.storage._base import StorageManager
from pedl.storage._shared_fs import SharedFSStorage


class UnsupportedStorageError(ValueError):
    """The config names a storage type this installation cannot use."""


def make_storage(config: CheckpointStorageConfig) -> StorageManager:
    if isinstance(config, SharedFSStorageConfig):
        base = Path(config.host_path).expanduser()
        if config.storage_path:
            base = base / config.storage_path
        return SharedFSStorage(base)
    if isinstance(config, DirectoryStorageConfig):
        return SharedFSStorage(Path(config.container_path).expanduser())
    raise UnsupportedStorageError(
        f"checkpoint_storage.type {config.type!r} is not supported yet; use shared_fs or directory"
    )
