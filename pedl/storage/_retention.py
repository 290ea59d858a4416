"""Which checkpoints to keep (save_trial_latest, save_trial_best, save_experiment_best), and
the collection of what killed uploads left behind.

In a multi-objective search (``searcher.metrics`` with several objectives) the best
checkpoints are ranked by Pareto order (front, then hypervolume contribution) of their
validations' objective vectors: ``save_experiment_best`` (at least 1) keeps the checkpoint of
every trial on the experiment's Pareto front, each trial counted by its latest checkpoint
taken at a validation with every objective (as the API's front counts each trial by its
latest validation), and more trials' in Pareto order up to that number; ``save_trial_best``
keeps that many of each trial's checkpoints in Pareto order. A checkpoint whose validation
lacks an objective is never among the best."""

from __future__ import annotations

import logging
import math
from collections import defaultdict
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass
from typing import Any

from pedl._pareto import pareto_front, pareto_order
from pedl.storage._base import StorageManager

logger = logging.getLogger(__name__)

TORN_UPLOAD_GRACE_SECONDS = 6 * 3600.0
"""How long an upload may go without writing anything before garbage collection takes it for
torn (its process killed): far longer than one file of a checkpoint takes to upload, so an
upload still going on is never collected."""


@dataclass(frozen=True)
class CheckpointSummary:
    storage_id: str
    trial_id: int
    total_batches: int
    metric: float | None  # the searcher metric of the validation it follows, if any
    objectives: tuple[float | None, ...] | None = None
    """A multi-objective search: each objective's value in the validation it follows."""


def checkpoint_objectives(
    metadata: Mapping[str, Any], names: Sequence[str]
) -> tuple[float | None, ...] | None:
    """Each objective's value in the validation a checkpoint follows (from its metadata's
    ``validation_metrics``; ``None`` for a missing or non-numeric one), or ``None`` unless
    ``names`` lists several objectives."""
    if len(names) < 2:
        return None
    validation = metadata.get("validation_metrics")
    found = validation if isinstance(validation, Mapping) else {}
    values: list[float | None] = []
    for name in names:
        value = found.get(name)
        if isinstance(value, int | float) and not isinstance(value, bool):
            values.append(float(value))
        else:
            values.append(None)
    return tuple(values)


def checkpoints_to_delete(
    checkpoints: Iterable[CheckpointSummary],
    *,
    smaller_is_better: bool,
    save_trial_latest: int,
    save_trial_best: int,
    save_experiment_best: int,
    keep: Iterable[str] = (),
    directions: Sequence[bool] = (),
) -> set[str]:
    """The ids of checkpoints no retention rule keeps (``keep`` are always kept).
    ``directions``: each objective's ``smaller_is_better`` in a multi-objective search (two
    or more: the best are ranked by Pareto order, see the module)."""
    all_checkpoints = list(checkpoints)
    kept = set(keep)
    if len(directions) > 1:
        return _multi_objective(
            all_checkpoints,
            list(directions),
            save_trial_latest=save_trial_latest,
            save_trial_best=save_trial_best,
            save_experiment_best=save_experiment_best,
            kept=kept,
        )

    def rank(c: CheckpointSummary) -> float:
        assert c.metric is not None
        return c.metric if smaller_is_better else -c.metric

    by_trial: dict[int, list[CheckpointSummary]] = defaultdict(list)
    for c in all_checkpoints:
        by_trial[c.trial_id].append(c)
    for trial_checkpoints in by_trial.values():
        latest = sorted(trial_checkpoints, key=lambda c: c.total_batches, reverse=True)
        kept.update(c.storage_id for c in latest[:save_trial_latest])
        scored = sorted((c for c in trial_checkpoints if c.metric is not None), key=rank)
        kept.update(c.storage_id for c in scored[:save_trial_best])
    scored = sorted((c for c in all_checkpoints if c.metric is not None), key=rank)
    kept.update(c.storage_id for c in scored[:save_experiment_best])
    return {c.storage_id for c in all_checkpoints} - kept


def _multi_objective(
    checkpoints: list[CheckpointSummary],
    directions: list[bool],
    *,
    save_trial_latest: int,
    save_trial_best: int,
    save_experiment_best: int,
    kept: set[str],
) -> set[str]:
    def point(c: CheckpointSummary) -> list[float] | None:
        values = c.objectives
        if values is None or len(values) != len(directions):
            return None
        numbers = [v for v in values if v is not None and math.isfinite(v)]
        if len(numbers) != len(directions):
            return None
        return [v if smaller else -v for v, smaller in zip(numbers, directions, strict=True)]

    def best(candidates: list[CheckpointSummary], count: int, *, front: bool) -> list[str]:
        scored = [(c, p) for c in candidates if (p := point(c)) is not None]
        points = [p for _, p in scored]
        order = pareto_order(points)
        chosen = order[:count]
        if front and count > 0:
            chosen += pareto_front(points)
        return [scored[i][0].storage_id for i in chosen]

    by_trial: dict[int, list[CheckpointSummary]] = defaultdict(list)
    for c in checkpoints:
        by_trial[c.trial_id].append(c)
    for trial_checkpoints in by_trial.values():
        latest = sorted(trial_checkpoints, key=lambda c: c.total_batches, reverse=True)
        kept.update(c.storage_id for c in latest[:save_trial_latest])
        kept.update(best(trial_checkpoints, save_trial_best, front=False))
    # One point per trial, as the experiment's front in the API: its latest scored checkpoint.
    latest_scored: dict[int, CheckpointSummary] = {}
    for c in checkpoints:
        known = latest_scored.get(c.trial_id)
        if point(c) is not None and (known is None or c.total_batches > known.total_batches):
            latest_scored[c.trial_id] = c
    kept.update(best(list(latest_scored.values()), save_experiment_best, front=True))
    return {c.storage_id for c in checkpoints} - kept


def collect_torn_uploads(
    storage: StorageManager, older_than: float = TORN_UPLOAD_GRACE_SECONDS
) -> list[str]:
    """Remove the files of uploads that never finished (never registered as checkpoints, so
    no retention rule sees them) and were last written ``older_than`` seconds ago; run by
    every checkpoint garbage collection. Returns their ids; a storage error is logged, not
    raised (the next collection tries again)."""
    try:
        torn = storage.delete_torn_uploads(older_than)
    except Exception as err:
        logger.warning("torn checkpoint uploads not collected: %s", err)
        return []
    if torn:
        logger.info("removed %d torn checkpoint upload(s): %s", len(torn), ", ".join(torn))
    return torn
