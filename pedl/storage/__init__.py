"""Checkpoint storage backends and retention."""

from pedl.storage._base import StorageManager, UnsupportedStorageError, list_resources
from pedl.storage._factory import make_storage, storage_unavailable_reason
from pedl.storage._retention import CheckpointSummary, checkpoints_to_delete
from pedl.storage._s3 import S3Storage
from pedl.storage._shared_fs import SharedFSStorage

__all__ = [
    "CheckpointSummary",
    "S3Storage",
    "SharedFSStorage",
    "StorageManager",
    "UnsupportedStorageError",
    "checkpoints_to_delete",
    "list_resources",
    "make_storage",
    "storage_unavailable_reason",
]
