"""The Pareto front of a multi-objective search, as the SDK returns it."""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any


@dataclass(frozen=True)
class ParetoPoint:
    """One trial as a point of its search's objective space: ``values`` maps each objective
    (``searcher.metrics``' names, in order) to its value in the trial's latest validation
    (``None`` where it is missing); ``rank`` is the Pareto front it lies on (0: not dominated
    by any other trial; ``None`` when it misses an objective); ``checkpoint_uuid`` the
    trial's checkpoint taken at that validation, else its latest."""

    trial_id: int
    state: str
    values: dict[str, float | None]
    rank: int | None
    checkpoint_uuid: str | None
    hparams: dict[str, Any] = field(default_factory=dict)


def points_of(body: Mapping[str, Any]) -> list[ParetoPoint]:
    """The points of a ``GET /experiments/{id}/pareto`` answer (``ParetoFrontPublic``)."""
    names = [str(o["name"]) for o in body.get("objectives", [])]
    return [
        ParetoPoint(
            trial_id=int(p["trial_id"]),
            state=str(p["state"]),
            values=dict(zip(names, p.get("values", []), strict=False)),
            rank=p.get("rank"),
            checkpoint_uuid=p.get("checkpoint_uuid"),
            hparams=dict(p.get("hparams") or {}),
        )
        for p in body.get("points", [])
    ]
