"""Queries on checkpoints: registration by the trial, lookup, listing, deletion by hand and
by retention (never of one a model version holds: :mod:`pedl.db._registry_models`)."""

from __future__ import annotations

from collections.abc import Collection, Mapping
from typing import Any

from sqlalchemy import func, select
from sqlalchemy.orm import Session

from pedl.db import trials as trials_repo
from pedl.db._errors import ConflictError, NotFoundError
from pedl.db._models import Checkpoint, Trial
from pedl.db._registry_models import ModelVersion, RegisteredModel
from pedl.db._types import utcnow
from pedl.vocabulary import CheckpointState


def register_checkpoint(
    session: Session,
    trial_id: int,
    *,
    uuid: str,
    total_batches: int,
    metadata: Mapping[str, Any],
    resources: Mapping[str, int],
    state: CheckpointState = CheckpointState.COMPLETED,
) -> Checkpoint:
    """Record (or update) a checkpoint of a trial; idempotent for the same content.

    Registering a known uuid again updates its state, metadata and resources (e.g. ACTIVE ->
    COMPLETED). Raises :class:`ConflictError` (field ``uuid``) when the uuid belongs to another
    trial, or (field ``total_batches``) when it was registered at another batch count. Keeps
    the trial's latest checkpoint (the completed one with the most batches) and best checkpoint
    up to date. Raises :class:`NotFoundError` for an unknown trial.
    """
    trial = trials_repo.get_trial(session, trial_id, for_update=True)
    checkpoint = session.scalars(select(Checkpoint).where(Checkpoint.uuid == uuid)).one_or_none()
    if checkpoint is None:
        checkpoint = Checkpoint(
            uuid=uuid,
            trial_id=trial_id,
            total_batches=total_batches,
            state=state,
            metadata_=dict(metadata),
            resources=dict(resources),
            created_at=utcnow(),
        )
        session.add(checkpoint)
    else:
        if checkpoint.trial_id != trial_id:
            raise ConflictError(
                f"checkpoint {uuid} belongs to trial {checkpoint.trial_id}", field="uuid"
            )
        if checkpoint.total_batches != total_batches:
            raise ConflictError(
                f"checkpoint {uuid} was registered at {checkpoint.total_batches} batches, "
                f"not {total_batches}",
                field="total_batches",
            )
        checkpoint.state = state
        checkpoint.metadata_ = dict(metadata)
        checkpoint.resources = dict(resources)
    session.flush()
    _refresh_latest(session, trial)
    trials_repo.refresh_trial_best(session, trial_id, [total_batches])
    return checkpoint


def _refresh_latest(session: Session, trial: Trial) -> None:
    trial.latest_checkpoint_uuid = session.scalar(
        select(Checkpoint.uuid)
        .where(Checkpoint.trial_id == trial.id, Checkpoint.state == CheckpointState.COMPLETED)
        .order_by(Checkpoint.total_batches.desc(), Checkpoint.id.desc())
        .limit(1)
    )
    session.flush()


def mark_checkpoints_deleted(session: Session, uuids: Collection[str]) -> None:
    """Record that these checkpoints' files are gone; the trials' latest/best pointers are
    recomputed from what is left."""
    _set_state(session, uuids, CheckpointState.DELETED)


def mark_checkpoints_partially_deleted(session: Session, uuids: Collection[str]) -> None:
    """Record that some of these checkpoints' files were removed: they are no longer any
    trial's latest or best checkpoint (a trial does not resume from them)."""
    _set_state(session, uuids, CheckpointState.PARTIALLY_DELETED)


def release_claimed(session: Session, uuids: Collection[str]) -> None:
    """Give back claimed checkpoints whose files could not be removed: COMPLETED again (listed,
    the trials' latest/best pointers recomputed), as they were before the claim."""
    _set_state(session, uuids, CheckpointState.COMPLETED, only_from=CheckpointState.DELETED)


def _set_state(
    session: Session,
    uuids: Collection[str],
    state: CheckpointState,
    *,
    only_from: CheckpointState | None = None,
) -> None:
    """Set these checkpoints' state (those in ``only_from``, if given) and recompute their
    trials' latest and best checkpoints."""
    if not uuids:
        return
    query = select(Checkpoint).where(Checkpoint.uuid.in_(list(uuids)))
    if only_from is not None:
        query = query.where(Checkpoint.state == only_from)
    trial_ids = set()
    for checkpoint in session.scalars(query):
        checkpoint.state = state
        if checkpoint.detached is None:
            trial_ids.add(checkpoint.trial_id)
    session.flush()
    for trial_id in sorted(trial_ids):
        _refresh_latest(session, trials_repo.get_trial(session, trial_id))
        trials_repo.refresh_trial_best(session, trial_id, ())


def registered_uuids(session: Session, uuids: Collection[str]) -> set[str]:
    """Those of these checkpoints that a model version holds."""
    if not uuids:
        return set()
    query = select(ModelVersion.checkpoint_uuid).where(
        ModelVersion.checkpoint_uuid.in_(list(uuids))
    )
    return set(session.scalars(query))


def claim_for_deletion(session: Session, uuids: Collection[str]) -> list[str]:
    """Mark DELETED those of these checkpoints no model version holds, before their files are
    removed, and return them (in the order given); registered ones are left as they are.

    The rows are locked first, and registering a version locks its checkpoint and needs it
    COMPLETED, so a checkpoint is never both registered and deleted."""
    if not uuids:
        return []
    list(
        session.scalars(
            select(Checkpoint.id).where(Checkpoint.uuid.in_(list(uuids))).with_for_update()
        )
    )
    held = registered_uuids(session, uuids)
    claimed = [uuid for uuid in dict.fromkeys(uuids) if uuid not in held]
    mark_checkpoints_deleted(session, claimed)
    return claimed


def deletion_refusal(session: Session, checkpoint: Checkpoint) -> str | None:
    """Why this checkpoint may not be deleted by hand, or ``None``: a model version holds it,
    or it is the latest checkpoint of a trial that may still run (its restart resumes from
    it)."""
    held = registrations_of(session, checkpoint.uuid)
    if held:
        return (
            f"checkpoint {checkpoint.uuid} is registered in the model registry as "
            f"{', '.join(held)}; delete those model versions first"
        )
    if checkpoint.detached is not None:
        return None
    trial = trials_repo.get_trial(session, checkpoint.trial_id)
    if trial.latest_checkpoint_uuid == checkpoint.uuid and not trial.state.is_terminal:
        return (
            f"checkpoint {checkpoint.uuid} is the latest checkpoint of trial {trial.id}, which "
            f"is {trial.state.value} and may still run (it would resume from it)"
        )
    return None


def registrations_of(session: Session, uuid: str) -> list[str]:
    """The model versions holding this checkpoint: ``["NAME v3", ...]``."""
    query = (
        select(RegisteredModel.name, ModelVersion.version)
        .join(RegisteredModel, RegisteredModel.id == ModelVersion.model_id)
        .where(ModelVersion.checkpoint_uuid == uuid)
        .order_by(RegisteredModel.name, ModelVersion.version)
    )
    return [f"{name} v{number}" for name, number in session.execute(query)]


def update_metadata(
    session: Session, uuid: str, *, add: Mapping[str, Any], remove: Collection[str]
) -> Checkpoint:
    """Set the top-level keys of ``add`` and drop those in ``remove`` in the checkpoint's
    metadata (Determined's ``add_metadata``/``remove_metadata``); the stored files are not
    changed."""
    checkpoint = get_checkpoint(session, uuid, for_update=True)
    metadata = dict(checkpoint.metadata_)
    for key in remove:
        metadata.pop(key, None)
    metadata.update(add)
    checkpoint.metadata_ = metadata
    session.flush()
    return checkpoint


def get_checkpoint(session: Session, uuid: str, *, for_update: bool = False) -> Checkpoint:
    """The checkpoint with this uuid; raises :class:`NotFoundError`."""
    query = select(Checkpoint).where(Checkpoint.uuid == uuid)
    if for_update:
        query = query.with_for_update()
    checkpoint = session.scalars(query).one_or_none()
    if checkpoint is None:
        raise NotFoundError("checkpoint", uuid)
    return checkpoint


def list_checkpoints(
    session: Session,
    *,
    experiment_id: int | None = None,
    trial_id: int | None = None,
    states: Collection[CheckpointState] | None = None,
    best_first: bool | None = None,
    limit: int = 100,
    offset: int = 0,
) -> tuple[list[tuple[Checkpoint, int]], int]:
    """One page of checkpoints as ``(checkpoint, experiment_id)`` pairs, and the total count,
    filtered by experiment, trial and states; oldest first, or best first by searcher metric
    when ``best_first`` is ``True`` (smaller is better) or ``False`` (larger is better),
    ties to the later checkpoint, checkpoints without a value last."""
    query = select(Checkpoint, Trial.experiment_id).join(Trial, Trial.id == Checkpoint.trial_id)
    count = (
        select(func.count()).select_from(Checkpoint).join(Trial, Trial.id == Checkpoint.trial_id)
    )
    conditions = []
    if experiment_id is not None:
        conditions.append(Trial.experiment_id == experiment_id)
    if trial_id is not None:
        conditions.append(Checkpoint.trial_id == trial_id)
    if states:
        conditions.append(Checkpoint.state.in_(list(states)))
    order: list[Any] = [Checkpoint.id]
    if best_first is not None:
        metric = Checkpoint.searcher_metric
        ranked = metric if best_first else metric.desc()
        order = [metric.is_(None), ranked, Checkpoint.total_batches.desc(), Checkpoint.id]
    query = query.where(*conditions).order_by(*order).limit(limit).offset(offset)
    rows = [(checkpoint, exp_id) for checkpoint, exp_id in session.execute(query)]
    return rows, session.scalar(count.where(*conditions)) or 0


def trials_started_from(session: Session, uuid: str) -> list[int]:
    """The ids of the trials that started from this checkpoint (warm start), in order."""
    query = select(Trial.id).where(Trial.warm_start_checkpoint_uuid == uuid).order_by(Trial.id)
    return list(session.scalars(query))
