"""Storing and restoring checkpoint directories through the storage backend."""

from __future__ import annotations

import contextlib
import json
import uuid
from collections.abc import Iterator, Mapping
from pathlib import Path
from typing import Any, Protocol

from pedl.storage import StorageManager, list_resources

METADATA_FILE = "metadata.json"


class CheckpointRegistry(Protocol):
    """Where a finished checkpoint is recorded (the local store, or the master).

    Contract: ``register`` is called once per checkpoint, after its files are stored; a
    checkpoint that was never registered does not exist for the platform.
    """

    def register_checkpoint(
        self,
        storage_id: str,
        total_batches: int,
        metadata: Mapping[str, Any],
        resources: Mapping[str, int],
    ) -> None: ...


class CheckpointContext:
    """Stores a checkpoint directory and records it; restores one by id."""

    def __init__(self, storage: StorageManager, registry: CheckpointRegistry) -> None:
        self._storage = storage
        self._registry = registry

    @contextlib.contextmanager
    def store_path(self, metadata: Mapping[str, Any]) -> Iterator[tuple[Path, str]]:
        """Yield ``(directory, storage_id)``; the directory's files become the checkpoint.

        ``metadata`` must hold ``steps_completed`` (batches trained). It is written to
        ``metadata.json`` inside the checkpoint, and the checkpoint is registered, only when
        the block finishes without an exception.
        """
        if "steps_completed" not in metadata:
            raise ValueError("checkpoint metadata must contain 'steps_completed'")
        storage_id = str(uuid.uuid4())
        with self._storage.store_path(storage_id) as path:
            yield path, storage_id
            (path / METADATA_FILE).write_text(json.dumps(dict(metadata), indent=2, sort_keys=True))
            resources = list_resources(path)
        self._registry.register_checkpoint(
            storage_id, int(metadata["steps_completed"]), metadata, resources
        )

    @contextlib.contextmanager
    def restore_path(self, storage_id: str) -> Iterator[Path]:
        with self._storage.restore_path(storage_id) as path:
            yield path

    def get_metadata(self, storage_id: str) -> dict[str, Any]:
        with self.restore_path(storage_id) as path:
            metadata: dict[str, Any] = json.loads((path / METADATA_FILE).read_text())
        return metadata
