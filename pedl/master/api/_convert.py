"""Turning stored rows into response bodies."""

from __future__ import annotations

from typing import Any

from pedl.db import Checkpoint
from pedl.master.api._schemas import CheckpointPublic, TrialErrorPublic
from pedl.vocabulary import TrialOutcome, TrialState, waiting_for_searcher


def checkpoint_public(
    checkpoint: Checkpoint, experiment_id: int, validation_metrics: dict[str, object] | None
) -> CheckpointPublic:
    """The public view of a checkpoint row."""
    resources = {str(path): int(size) for path, size in checkpoint.resources.items()}
    return CheckpointPublic(
        uuid=checkpoint.uuid,
        trial_id=checkpoint.detached["trial_id"] if checkpoint.detached else checkpoint.trial_id,
        experiment_id=experiment_id,
        total_batches=checkpoint.total_batches,
        state=checkpoint.state,
        metadata=checkpoint.metadata_,
        resources=resources,
        size=sum(resources.values()),
        created_at=checkpoint.created_at,
        validation_metrics=validation_metrics,
    )


TRIAL_PUBLIC_FIELDS = (
    "id",
    "experiment_id",
    "request_id",
    "hparams",
    "seed",
    "state",
    "restarts",
    "total_batches",
    "latest_checkpoint_uuid",
    "best_checkpoint_uuid",
    "best_validation",
    "outcome",
    "error",
    "created_at",
    "ended_at",
    "warm_start_checkpoint_uuid",
    "parent_trial_id",
    "parent_batches",
    "changed_hparams",
)
"""The fields of :class:`TrialPublic`, in its order (a test checks they are the same); its
computed ``waiting_for_searcher`` follows them."""


def trial_public_document(document: dict[str, Any]) -> dict[str, Any]:
    """A trial's JSON-ready document (:func:`pedl.db.trials.list_trial_documents`) as
    :class:`TrialPublic` serializes it (with ``inf_nan_mode="null"``), without building the
    model: its fields in order, the error through :class:`TrialErrorPublic` (defaults filled),
    every other field already what the model writes."""
    public = {name: document[name] for name in TRIAL_PUBLIC_FIELDS}
    if public["error"] is not None:
        public["error"] = TrialErrorPublic.model_validate(public["error"]).model_dump(mode="json")
    outcome = public["outcome"]
    public["waiting_for_searcher"] = waiting_for_searcher(
        TrialState(public["state"]),
        None if outcome is None else TrialOutcome(outcome),
        public["total_batches"],
    )
    return public
