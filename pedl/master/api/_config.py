"""Validating a submitted experiment config with :mod:`pedl.config`."""

from __future__ import annotations

import json
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from sqlalchemy import select
from sqlalchemy.orm import Session

from pedl.config import (
    ConfigError,
    ExperimentConfig,
    check_storage_roots,
    config_warnings,
    parse_config,
)
from pedl.db._models import Checkpoint, Trial
from pedl.engine import with_default_storage
from pedl.master.api._errors import ApiError
from pedl.master.api._schemas import ErrorIssue
from pedl.searcher import unavailable_reason
from pedl.storage import storage_unavailable_reason
from pedl.vocabulary import CheckpointState


@dataclass(frozen=True)
class ValidatedConfig:
    """A config that passed validation, in the forms the database keeps."""

    document: dict[str, Any]
    """Canonical JSON form, defaults filled."""
    text: str
    """As submitted (a mapping is kept as indented JSON, which is also YAML)."""
    name: str | None
    searcher_metric: str | None
    smaller_is_better: bool
    config: ExperimentConfig
    """The parsed config (with the master's defaults applied)."""
    warnings: list[str] = field(default_factory=list)
    """For the submitter: at most one, listing the Determined fields set that PEDL ignores."""


def validate_experiment_config(
    source: str | Mapping[str, Any],
    *,
    default_checkpoint_dir: Path | None = None,
    storage_roots: Sequence[Path] | None = None,
) -> ValidatedConfig:
    """Parse and validate ``source`` (YAML text or a mapping).

    A config that names no ``checkpoint_storage`` gets ``shared_fs`` at
    ``default_checkpoint_dir`` when one is given (the master's ``checkpoint_dir``). With
    ``storage_roots`` (resolved directories), every path the config names on this machine
    must lie inside one of them (see :func:`pedl.config.check_storage_roots`).

    Raises :class:`ApiError` 422 listing every problem, each with the field path under
    ``config`` (e.g. ``config.searcher.metric``) and the YAML line when known; that includes
    settings PEDL cannot run (e.g. ``config.searcher.name: adaptive_asha``).
    """
    try:
        config = parse_config(source)
    except ConfigError as err:
        raise _config_api_error(err) from err
    unavailable = unavailable_reason(config)
    if unavailable is not None:
        raise _refuse("name", unavailable)
    unavailable = storage_unavailable_reason(config.checkpoint_storage)
    if unavailable is not None:
        raise _refuse("type", unavailable, section="checkpoint_storage")
    warnings = config_warnings(config)
    if default_checkpoint_dir is not None:
        config = with_default_storage(config, default_checkpoint_dir)
    if storage_roots is not None:
        try:
            check_storage_roots(config, storage_roots)
        except ConfigError as err:
            raise _config_api_error(err) from err
    text = source if isinstance(source, str) else json.dumps(dict(source), indent=2)
    return ValidatedConfig(
        document=config.as_dict(),
        text=text,
        name=config.name,
        searcher_metric=config.searcher.metric,
        smaller_is_better=config.searcher.smaller_is_better,
        config=config,
        warnings=warnings,
    )


def _config_api_error(err: ConfigError) -> ApiError:
    issues = [
        ErrorIssue(
            field=f"config.{issue.path}" if issue.path else "config",
            message=issue.message,
            line=issue.line,
        )
        for issue in err.issues
    ]
    count = len(issues)
    summary = f"invalid experiment config ({count} problem{'s' if count != 1 else ''})"
    first = issues[0]
    return ApiError(
        422, f"{summary}: {first.field}: {first.message}", field=first.field, issues=issues
    )


def _refuse(field: str, message: str, *, section: str = "searcher") -> ApiError:
    where = f"config.{section}.{field}"
    return ApiError(
        422, f"{where}: {message}", field=where, issues=[ErrorIssue(field=where, message=message)]
    )


def resolve_warm_start(session: Session, validated: ValidatedConfig) -> ValidatedConfig:
    """Check the config's warm start and pin it to one checkpoint.

    ``searcher.source_trial_id`` becomes that trial's latest checkpoint, written into
    ``searcher.source_checkpoint_uuid`` (so a later checkpoint of that trial does not change
    this experiment); the checkpoint must exist and be completed. Raises :class:`ApiError`
    422 naming the field otherwise.
    """
    searcher = validated.config.searcher
    source = searcher.source_checkpoint_uuid
    if searcher.source_trial_id is not None:
        trial = session.get(Trial, searcher.source_trial_id)
        if trial is None:
            raise _refuse("source_trial_id", f"there is no trial {searcher.source_trial_id}")
        if trial.latest_checkpoint_uuid is None:
            raise _refuse(
                "source_trial_id", f"trial {trial.id} has no checkpoint to warm-start from"
            )
        if source is not None and source != trial.latest_checkpoint_uuid:
            raise _refuse(
                "source_checkpoint_uuid",
                f"is not the latest checkpoint of source_trial_id {trial.id}; give one of them",
            )
        source = trial.latest_checkpoint_uuid
    if source is None:
        return validated
    state = session.scalar(select(Checkpoint.state).where(Checkpoint.uuid == source))
    if state != CheckpointState.COMPLETED:
        why = "there is no such checkpoint" if state is None else f"it is {state.value}"
        raise _refuse("source_checkpoint_uuid", f"cannot warm-start from {source}: {why}")
    update = {"searcher": searcher.model_copy(update={"source_checkpoint_uuid": source})}
    config = validated.config.model_copy(update=update)
    return ValidatedConfig(
        document=config.as_dict(),
        text=validated.text,
        name=validated.name,
        searcher_metric=validated.searcher_metric,
        smaller_is_better=validated.smaller_is_better,
        config=config,
        warnings=validated.warnings,
    )


def refuse_unlaunchable(orchestrator: object, config: ExperimentConfig) -> None:
    """422 when no trial of ``config`` could ever start on this master (the orchestrator's
    ``launch_problem``: e.g. its trial user cannot run the trials' Python or reach their
    checkpoint storage), naming the field to change and the ways out, instead of accepting an
    experiment whose every trial would end ERROR. Nothing to check without an orchestrator
    (an API-only master)."""
    launch_problem = getattr(orchestrator, "launch_problem", None)
    if launch_problem is None:
        return
    problem = launch_problem(config)
    if problem is None:
        return
    field, reason = problem
    where = "config" if field is None else f"config.{field}"
    message = f"no trial of this experiment could start on this master: {reason}"
    raise ApiError(422, message, field=where, issues=[ErrorIssue(field=where, message=reason)])
