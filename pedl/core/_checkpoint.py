"""Storing and restoring checkpoint directories through the storage backend."""

from __future__ import annotations

import contextlib
import errno
import json
import os
import uuid
from collections.abc import Iterator, Mapping
from pathlib import Path
from typing import TYPE_CHECKING, Any, Protocol

from pedl.storage import StorageManager, list_resources

if TYPE_CHECKING:
    from pedl.core._distributed import DistributedContext

METADATA_FILE = "metadata.json"

STORAGE_FULL_ERRNOS = frozenset({errno.ENOSPC, errno.EDQUOT})
"""The errors of a write that found no room: the device is full, or the user's quota is."""


class CheckpointStorageFullError(OSError):
    """A checkpoint could not be stored because its storage is full (ENOSPC) or over quota
    (EDQUOT). Nothing of it was kept: the backend removed its partial files, and it was
    never registered. Raised from :meth:`CheckpointContext.store_path` (from the original
    error), so the trial errors with a message that says so, and a restart goes on from the
    latest checkpoint once there is room."""


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
    """Stores a checkpoint directory and records it; restores one by id.

    With several workers (``distributed`` of size > 1) only the chief stores and registers
    checkpoints (the state of every worker that differs must reach it first); every worker
    may restore one.
    """

    def __init__(
        self,
        storage: StorageManager,
        registry: CheckpointRegistry,
        distributed: DistributedContext | None = None,
    ) -> None:
        self._storage = storage
        self._registry = registry
        self._is_chief = distributed is None or distributed.is_chief

    @contextlib.contextmanager
    def store_path(self, metadata: Mapping[str, Any]) -> Iterator[tuple[Path, str]]:
        """Yield ``(directory, storage_id)``; the directory's files become the checkpoint.

        ``metadata`` must hold ``steps_completed`` (batches trained). It is written to
        ``metadata.json`` inside the checkpoint, and the checkpoint is registered, only when
        the block finishes without an exception. A write that finds the storage full raises
        :class:`CheckpointStorageFullError`.
        """
        if not self._is_chief:
            raise RuntimeError(
                "only the chief (rank 0) stores checkpoints: call store_path on the chief, "
                "after gathering there the state of the other workers that it needs"
            )
        if "steps_completed" not in metadata:
            raise ValueError("checkpoint metadata must contain 'steps_completed'")
        storage_id = str(uuid.uuid4())
        written_in: Path | None = None
        try:
            with self._storage.store_path(storage_id) as path:
                written_in = path
                yield path, storage_id
                # One line: ``indent`` would take json's pure-Python encoder, a fixed cost
                # of every checkpoint (in P3's 249 kB case about half a millisecond of its ~2 ms).
                (path / METADATA_FILE).write_text(json.dumps(dict(metadata), sort_keys=True))
                resources = list_resources(path)
        except OSError as err:
            if err.errno not in STORAGE_FULL_ERRNOS:
                raise
            where = err.filename or written_in
            raise CheckpointStorageFullError(
                err.errno,
                f"checkpoint storage is full: the checkpoint after {metadata['steps_completed']} "
                f"batches was not stored ({os.strerror(err.errno)}"
                f"{f' writing in {where}' if where else ''}); nothing of it was kept. Free space "
                "there (or choose another checkpoint_storage): a restart goes on from the "
                "latest checkpoint",
            ) from err
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
