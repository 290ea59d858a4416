"""An experiment's scheduling and retention settings changed after its creation (``det
experiment set max-slots / priority / weight / gc-policy``): the bodies' parts, their checks,
and carrying a change out (the stored config, the running orchestrator, garbage collection of
an ended experiment's checkpoints)."""

from __future__ import annotations

import logging
from typing import Any

from pydantic import BaseModel, ConfigDict, Field
from sqlalchemy.orm import Session

from pedl.config import MAX_SLOTS, ExperimentConfig, parse_config
from pedl.db import Database, SQLExperimentStore
from pedl.db import experiment_config as config_repo
from pedl.db import experiments as experiments_repo
from pedl.engine import checkpoints_past_retention, delete_checkpoints
from pedl.master.api._errors import ApiError
from pedl.master.orchestrator import Orchestrator
from pedl.storage import make_storage

logger = logging.getLogger(__name__)

MAX_WEIGHT = 1_000_000.0
MAX_KEPT_CHECKPOINTS = 1_000_000


class ResourcesPatch(BaseModel):
    """``resources`` of ``PATCH /experiments/{id}``: the scheduler's settings (a field left
    out stays; ``max_slots: null`` removes the cap)."""

    model_config = ConfigDict(extra="forbid")

    max_slots: int | None = Field(
        default=None,
        ge=1,
        le=MAX_SLOTS,
        description="At least 1 and slots_per_trial; null: no cap.",
    )
    priority: int | None = Field(default=None, ge=1, le=99, description="1 (first) to 99.")
    weight: float | None = Field(
        default=None, gt=0, le=MAX_WEIGHT, description="Fair-share weight, above 0."
    )


class CheckpointStoragePatch(BaseModel):
    """``checkpoint_storage`` of ``PATCH /experiments/{id}``: the retention policy (a field
    left out stays)."""

    model_config = ConfigDict(extra="forbid")

    save_experiment_best: int | None = Field(default=None, ge=0, le=MAX_KEPT_CHECKPOINTS)
    save_trial_best: int | None = Field(default=None, ge=0, le=MAX_KEPT_CHECKPOINTS)
    save_trial_latest: int | None = Field(default=None, ge=0, le=MAX_KEPT_CHECKPOINTS)


def settings_changes(
    config: ExperimentConfig,
    resources: ResourcesPatch | None,
    storage: CheckpointStoragePatch | None,
) -> dict[tuple[str, str], Any]:
    """The ``(section, key): value`` changes the patch parts ask for; 422 naming the field
    for a value the experiment cannot take (a null it needs, max_slots under
    slots_per_trial)."""
    changes: dict[tuple[str, str], Any] = {}
    for section, part in (("resources", resources), ("checkpoint_storage", storage)):
        if part is None:
            continue
        for key in part.model_fields_set:
            value = getattr(part, key)
            if value is None and key != "max_slots":
                raise ApiError(422, f"{section}.{key} must not be null", field=f"{section}.{key}")
            changes[(section, key)] = value
    max_slots = changes.get(("resources", "max_slots"))
    per_trial = config.resources.slots_per_trial
    if max_slots is not None and max_slots < per_trial:
        raise ApiError(
            422,
            f"resources.max_slots {max_slots} is less than the experiment's "
            f"resources.slots_per_trial ({per_trial}): no trial could ever start",
            field="resources.max_slots",
        )
    return changes


def apply_settings(
    database: Database,
    experiment_id: int,
    changes: dict[tuple[str, str], Any],
    orchestrator: object,
) -> None:
    """Store the changes, then have them acted upon: a running experiment's orchestrator
    swaps its config at once (its scheduler and garbage collection use the new values); an
    ended experiment's checkpoints that the new retention policy does not keep are deleted
    now (as ``det experiment set gc-policy`` runs GC)."""
    with database.session(write=True) as session:
        experiment = config_repo.set_config_fields(session, experiment_id, changes)
        config = parse_config(experiment.config)
        ended = experiment.state.is_terminal
    if isinstance(orchestrator, Orchestrator) and not ended:
        orchestrator.experiment_config_changed(experiment_id, config)
    if ended and any(section == "checkpoint_storage" for section, _ in changes):
        collect_garbage(database, experiment_id, config)


def doomed_checkpoints(
    database: Database, experiment_id: int, config: ExperimentConfig
) -> list[str]:
    """The ids of the experiment's completed checkpoints that ``config``'s retention policy
    does not keep, by the rule the experiment itself applies
    (:func:`pedl.engine.checkpoints_past_retention`)."""
    stored = SQLExperimentStore(database).load(experiment_id)
    return sorted(checkpoints_past_retention(config, stored.checkpoints, stored.trials))


def collect_garbage(database: Database, experiment_id: int, config: ExperimentConfig) -> None:
    """Delete the checkpoints :func:`doomed_checkpoints` names, as every deletion goes
    (:func:`pedl.engine.delete_checkpoints`: a registered checkpoint is left alone, one whose
    files cannot be removed is logged and stays listed)."""
    doomed = doomed_checkpoints(database, experiment_id, config)
    if not doomed:
        return
    storage = make_storage(config.checkpoint_storage)
    deleted = delete_checkpoints(SQLExperimentStore(database), storage, doomed)
    logger.info("experiment %d: deleted %d checkpoints (gc-policy)", experiment_id, len(deleted))


def stored_config(session: Session, experiment_id: int) -> ExperimentConfig:
    """The experiment's stored config, parsed."""
    return parse_config(experiments_repo.get_experiment(session, experiment_id).config)
