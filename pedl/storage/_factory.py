"""Choosing the storage backend an experiment's ``checkpoint_storage`` names."""

from __future__ import annotations

from pathlib import Path

from pedl.config import (
    AzureStorageConfig,
    CheckpointStorageConfig,
    DirectoryStorageConfig,
    GCSStorageConfig,
    S3StorageConfig,
    SharedFSStorageConfig,
)
from pedl.storage._azure import AzureStorage, azure_unavailable_reason
from pedl.storage._base import StorageManager, UnsupportedStorageError
from pedl.storage._gcs import GCSStorage, gcs_unavailable_reason
from pedl.storage._s3 import S3Storage, s3_unavailable_reason
from pedl.storage._shared_fs import SharedFSStorage


def make_storage(config: CheckpointStorageConfig) -> StorageManager:
    """The backend for ``config``; raises :class:`UnsupportedStorageError` for a type this
    installation cannot use (``s3``, ``gcs`` or ``azure`` without its client library)."""
    if isinstance(config, SharedFSStorageConfig):
        base = Path(config.host_path).expanduser()
        if config.storage_path:
            base = base / config.storage_path
        return SharedFSStorage(base)
    if isinstance(config, DirectoryStorageConfig):
        return SharedFSStorage(Path(config.container_path).expanduser())
    if isinstance(config, S3StorageConfig):
        return S3Storage(
            config.bucket,
            config.prefix,
            access_key=config.access_key,
            secret_key=config.secret_key,
            endpoint_url=config.endpoint_url,
        )
    if isinstance(config, GCSStorageConfig):
        return GCSStorage(config.bucket, config.prefix)
    if isinstance(config, AzureStorageConfig):
        return AzureStorage(
            config.container,
            connection_string=config.connection_string,
            account_url=config.account_url,
            credential=config.credential,
        )
    raise UnsupportedStorageError(
        f"checkpoint_storage.type {config.type!r} is not supported yet; use shared_fs, directory "
        "s3, gcs or azure"
    )


def storage_unavailable_reason(config: CheckpointStorageConfig) -> str | None:
    """Why ``config``'s storage cannot be used in this Python environment (an optional
    dependency it needs is missing), or ``None``. Checked where checkpoints are stored or
    read: by the master when an experiment is created, and by local mode."""
    if isinstance(config, S3StorageConfig):
        return s3_unavailable_reason()
    if isinstance(config, GCSStorageConfig):
        return gcs_unavailable_reason()
    if isinstance(config, AzureStorageConfig):
        return azure_unavailable_reason()
    return None
