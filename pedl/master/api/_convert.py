"""Turning stored rows into response bodies."""

from __future__ import annotations

from pedl.master.api._schemas import CheckpointPublic
from pedl.master.db import Checkpoint


def checkpoint_public(
    checkpoint: Checkpoint, experiment_id: int, validation_metrics: dict[str, object] | None
) -> CheckpointPublic:
    """The public view of a checkpoint row."""
    resources = {str(path): int(size) for path, size in checkpoint.resources.items()}
    return CheckpointPublic(
        uuid=checkpoint.uuid,
        trial_id=checkpoint.trial_id,
        experiment_id=experiment_id,
        total_batches=checkpoint.total_batches,
        state=checkpoint.state,
        metadata=checkpoint.metadata_,
        resources=resources,
        size=sum(resources.values()),
        created_at=checkpoint.created_at,
        validation_metrics=validation_metrics,
    )
