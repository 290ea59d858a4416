"""Deleting checkpoints, the one way every shell carries out the engine's
:class:`~pedl.engine.DeleteCheckpoints` (local mode, the master's orchestrator, the master's
garbage collection after a retention change)."""

from __future__ import annotations

import logging
from collections.abc import Sequence
from typing import TYPE_CHECKING

from pedl.storage import StorageManager, collect_torn_uploads

if TYPE_CHECKING:
    from pedl.engine._store import ExperimentStore

logger = logging.getLogger("pedl.engine")


def delete_checkpoints(
    store: ExperimentStore, storage: StorageManager, storage_ids: Sequence[str]
) -> list[str]:
    """Delete these checkpoints, in this order: claim them in the store (registered ones are
    left alone), remove each claimed one's files, give back those whose files could not be
    removed (they stay listed, COMPLETED; the error is logged), and collect what uploads killed
    mid-way left in the storage. Returns the checkpoints deleted. Blocking (storage I/O):
    shells run it off their event loop."""
    claimed = store.claim_checkpoints_for_deletion(storage_ids)
    kept = []
    for storage_id in claimed:
        try:
            storage.delete(storage_id)
        except Exception as err:  # one unreachable checkpoint must not keep the others
            logger.warning(
                "checkpoint %s: its files were not removed, it stays listed (%s: %s)",
                storage_id,
                type(err).__name__,
                err,
            )
            kept.append(storage_id)
    if kept:
        store.release_checkpoints(kept)
    collect_torn_uploads(storage)
    return [storage_id for storage_id in claimed if storage_id not in kept]
