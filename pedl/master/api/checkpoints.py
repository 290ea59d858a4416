"""``/api/v1/checkpoints``: a checkpoint by uuid."""

from __future__ import annotations

from uuid import UUID

from fastapi import APIRouter

from pedl.master.api._auth import USER_AUTH_RESPONSES, require_user
from pedl.master.api._convert import checkpoint_public
from pedl.master.api._deps import ReadSession
from pedl.master.api._errors import ERROR_RESPONSES
from pedl.master.api._schemas import CheckpointPublic
from pedl.master.db import checkpoints as checkpoints_repo
from pedl.master.db import metrics as metrics_repo
from pedl.master.db import trials as trials_repo

router = APIRouter(
    prefix="/checkpoints",
    tags=["checkpoints"],
    responses={**ERROR_RESPONSES, **USER_AUTH_RESPONSES},
    dependencies=[require_user],
)


@router.get("/{checkpoint_uuid}")
def get_checkpoint(checkpoint_uuid: UUID, session: ReadSession) -> CheckpointPublic:
    """One checkpoint, with the validation metrics its trial reported at the same batch."""
    checkpoint = checkpoints_repo.get_checkpoint(session, str(checkpoint_uuid))
    trial = trials_repo.get_trial(session, checkpoint.trial_id)
    return checkpoint_public(
        checkpoint,
        trial.experiment_id,
        metrics_repo.validation_metrics_at(session, trial.id, checkpoint.total_batches),
    )
