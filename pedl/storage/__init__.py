"""Checkpoint storage backends and retention."""

from pedl.storage._base import StorageManager, list_resources
from pedl.storage._factory import UnsupportedStorageError, make_storage
from pedl.storage._retention import CheckpointSummary, checkpoints_to_delete
from pedl.storage._shared_fs import SharedFSStorage

__all__ = [
    "CheckpointSummary",
    "SharedFSStorage",
    "StorageManager",
    "UnsupportedStorageError",
    "checkpoints_to_delete",
    "list_resources",
    "make_storage",
]
