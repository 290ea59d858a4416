"""Checkpoint storage backends and retention."""

from pedl.storage._azure import AzureStorage
from pedl.storage._base import StorageManager, UnsupportedStorageError, list_resources
from pedl.storage._event_files import EventFileDownloader, EventFileUploader, delete_snapshots
from pedl.storage._factory import make_storage, storage_unavailable_reason
from pedl.storage._gcs import GCSStorage
from pedl.storage._retention import (
    TORN_UPLOAD_GRACE_SECONDS,
    CheckpointSummary,
    checkpoint_objectives,
    checkpoints_to_delete,
    collect_torn_uploads,
)
from pedl.storage._s3 import S3Storage
from pedl.storage._shared_fs import SharedFSStorage

__all__ = [
    "TORN_UPLOAD_GRACE_SECONDS",
    "AzureStorage",
    "CheckpointSummary",
    "EventFileDownloader",
    "EventFileUploader",
    "GCSStorage",
    "S3Storage",
    "SharedFSStorage",
    "StorageManager",
    "UnsupportedStorageError",
    "checkpoint_objectives",
    "checkpoints_to_delete",
    "collect_torn_uploads",
    "delete_snapshots",
    "list_resources",
    "make_storage",
    "storage_unavailable_reason",
]
