"""Checkpoint storage backends."""

from pedl.storage._base import StorageManager, list_resources
from pedl.storage._shared_fs import SharedFSStorage

__all__ = ["SharedFSStorage", "StorageManager", "list_resources"]
