"""``/api/v1/experiments/{id}/pareto``: the experiment's best trials as a Pareto front over
its objectives (``searcher.metrics``; one objective, ``searcher.metric``, for other searches).

Each trial is one point: the values of the objectives in its latest validation (the one with
the most batches) that holds them all; a trial without one is on no front. The front is
computed from the stored metrics at each request (non-dominated sorting,
:func:`pedl.searcher.front_ranks`), so it is the same in the API, the SDK and the web UI.
"""

from __future__ import annotations

import math
from collections.abc import Mapping
from typing import Any

from fastapi import APIRouter, Query
from pydantic import Field
from sqlalchemy.orm import Session

from pedl.db import checkpoints as checkpoints_repo
from pedl.db import experiments as experiments_repo
from pedl.db import trials as trials_repo
from pedl.master.api._auth import USER_AUTH_RESPONSES, require_user
from pedl.master.api._deps import ExperimentId, ReadSession
from pedl.master.api._errors import ERROR_RESPONSES
from pedl.master.api._schemas import ResponseBody
from pedl.searcher import front_ranks
from pedl.vocabulary import CheckpointState, TrialState, decode_metric_value

router = APIRouter(
    prefix="/experiments",
    tags=["visualization"],
    responses={**ERROR_RESPONSES, **USER_AUTH_RESPONSES},
    dependencies=[require_user],
)

MAX_CHECKPOINTS = 10_000
"""The experiment's checkpoints read to find each front trial's checkpoint (retention keeps
far fewer)."""


class ParetoObjective(ResponseBody):
    """One objective of the search: a validation metric and its direction."""

    name: str
    smaller_is_better: bool


class ParetoPointPublic(ResponseBody):
    """One trial as a point of the search's objective space."""

    trial_id: int
    state: TrialState
    hparams: dict[str, Any]
    values: list[float | None] = Field(
        description="Each objective's value in the trial's latest validation, in the order "
        "of objectives (null where it is missing or not finite)."
    )
    rank: int | None = Field(
        description="The Pareto front the point lies on (0: the best trials, not dominated "
        "by any other); null for a point missing an objective."
    )
    checkpoint_uuid: str | None = Field(
        description="The trial's checkpoint taken at that validation (its metadata holds the "
        "same values), else its latest checkpoint; null if it has none."
    )


class ParetoFrontPublic(ResponseBody):
    """The experiment's objectives, its Pareto front (trial ids) and every trial's point."""

    experiment_id: int
    objectives: list[ParetoObjective]
    front: list[int] = Field(description="The ids of the trials on the front (rank 0).")
    points: list[ParetoPointPublic]


@router.get("/{experiment_id}/pareto")
def get_pareto_front(
    experiment_id: ExperimentId,
    session: ReadSession,
    front_only: bool = Query(default=False, description="Only the points of the front."),
) -> ParetoFrontPublic:
    """The experiment's best trials as a Pareto front over its objectives (its
    ``searcher.metrics``, or its one ``searcher.metric``), with every trial's point (or only
    the front's, with ``front_only``): the objectives' values in its latest validation that
    holds them all, its front rank and its checkpoint. Points are ordered by rank, then by
    trial id."""
    experiment = experiments_repo.get_experiment(session, experiment_id)
    objectives = _objectives(experiment.config)
    trials = trials_repo.all_trials(session, experiment_id)
    latest = trials_repo.latest_validations(session, [t.id for t in trials])
    names = [o.name for o in objectives]
    vectors = [_values(latest.get(t.id, {}), names) for t in trials]
    ranks = front_ranks(vectors, [o.smaller_is_better for o in objectives])
    checkpoints = _checkpoints(session, experiment_id, names)
    points = [
        ParetoPointPublic(
            trial_id=t.id,
            state=t.state,
            hparams=t.hparams,
            values=values,
            rank=rank,
            checkpoint_uuid=_checkpoint_of(checkpoints.get(t.id, []), values)
            or t.latest_checkpoint_uuid,
        )
        for t, values, rank in zip(trials, vectors, ranks, strict=True)
        if not front_only or rank == 0
    ]
    points.sort(key=lambda p: (p.rank is None, p.rank or 0, p.trial_id))
    return ParetoFrontPublic(
        experiment_id=experiment_id,
        objectives=objectives,
        front=[p.trial_id for p in points if p.rank == 0],
        points=points,
    )


def _objectives(config: Mapping[str, Any]) -> list[ParetoObjective]:
    """The objectives of a stored config: ``searcher.metrics``, else ``searcher.metric``."""
    searcher = config.get("searcher")
    searcher = searcher if isinstance(searcher, Mapping) else {}
    listed = searcher.get("metrics")
    if isinstance(listed, list) and listed:
        return [
            ParetoObjective(
                name=str(o.get("name")), smaller_is_better=bool(o.get("smaller_is_better", True))
            )
            for o in listed
            if isinstance(o, Mapping)
        ]
    return [
        ParetoObjective(
            name=str(searcher.get("metric", "")),
            smaller_is_better=bool(searcher.get("smaller_is_better", True)),
        )
    ]


def _values(metrics: Mapping[str, Any], names: list[str]) -> list[float | None]:
    values: list[float | None] = []
    for name in names:
        value = decode_metric_value(metrics.get(name))
        if isinstance(value, int | float) and not isinstance(value, bool) and math.isfinite(value):
            values.append(float(value))
        else:
            values.append(None)
    return values


def _checkpoints(
    session: Session, experiment_id: int, names: list[str]
) -> dict[int, list[tuple[int, list[float | None], str]]]:
    """Each trial's completed checkpoints: (batches, objective values, uuid)."""
    rows, _total = checkpoints_repo.list_checkpoints(
        session,
        experiment_id=experiment_id,
        states=[CheckpointState.COMPLETED],
        limit=MAX_CHECKPOINTS,
    )
    found: dict[int, list[tuple[int, list[float | None], str]]] = {}
    for checkpoint, _experiment in rows:
        metadata = checkpoint.metadata_ if isinstance(checkpoint.metadata_, Mapping) else {}
        validation = metadata.get("validation_metrics")
        values = _values(validation if isinstance(validation, Mapping) else {}, names)
        entry = (checkpoint.total_batches, values, checkpoint.uuid)
        found.setdefault(checkpoint.trial_id, []).append(entry)
    return found


def _checkpoint_of(
    checkpoints: list[tuple[int, list[float | None], str]], values: list[float | None]
) -> str | None:
    """The latest of the trial's checkpoints taken at a validation with these values."""
    matching = [c for c in checkpoints if c[1] == values and None not in values]
    return max(matching, key=lambda c: c[0])[2] if matching else None
