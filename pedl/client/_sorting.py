"""Sorting trials and checkpoints the way Determined's SDK lists them (its ``TrialSortBy``
and ``CheckpointSortBy``), on the records the master sent."""

from __future__ import annotations

import math
from collections.abc import Callable, Iterable, Mapping
from datetime import datetime
from typing import TYPE_CHECKING, Any

from pedl.client._ordering import CheckpointSortBy, OrderBy, TrialSortBy

if TYPE_CHECKING:
    from pedl.client._checkpoint import Checkpoint
    from pedl.client._trial import Trial


def _ordered(items: Iterable[Any], key: Callable[[Any], Any], ascending: bool) -> list[Any]:
    """``items`` by ``key`` (``None``: no value, always last), ties in their given order."""
    valued = [item for item in items if key(item) is not None]
    missing = [item for item in items if key(item) is None]
    return [*sorted(valued, key=key, reverse=not ascending), *missing]


def _finite(value: Any) -> float | None:
    if isinstance(value, bool) or not isinstance(value, int | float):
        return None
    return float(value) if math.isfinite(value) else None


def _searcher_metric_value(trial: Trial, experiment: Mapping[str, Any]) -> float | None:
    metric = experiment.get("searcher_metric")
    latest = trial.to_dict().get("latest_validation") or {}
    return _finite(latest.get(metric)) if metric else None


def _duration(trial: Trial) -> float | None:
    if trial.ended_at is None:
        return None
    return (trial.ended_at - trial.created_at).total_seconds()


def sort_trials(
    trials: Iterable[Trial],
    sort_by: TrialSortBy,
    order_by: OrderBy,
    experiment: Mapping[str, Any],
) -> list[Trial]:
    """``trials`` sorted by ``sort_by`` (``experiment``: their experiment's record, for its
    searcher metric). ``CHECKPOINT_SIZE`` and ``LOG_RETENTION_DAYS``, which PEDL does not
    keep per trial, sort by id."""
    keys: dict[TrialSortBy, Callable[[Trial], Any]] = {
        TrialSortBy.ID: lambda t: t.id,
        TrialSortBy.START_TIME: lambda t: t.created_at,
        TrialSortBy.END_TIME: lambda t: t.ended_at,
        TrialSortBy.STATE: lambda t: t.state.value,
        TrialSortBy.BEST_VALIDATION_METRIC: lambda t: _finite(t.best_validation),
        TrialSortBy.LATEST_VALIDATION_METRIC: lambda t: _searcher_metric_value(t, experiment),
        TrialSortBy.BATCHES_PROCESSED: lambda t: t.total_batches,
        TrialSortBy.DURATION: _duration,
        TrialSortBy.RESTARTS: lambda t: t.restarts,
    }
    key = keys.get(sort_by, keys[TrialSortBy.ID])
    by_id = sorted(trials, key=lambda t: t.id)
    return _ordered(by_id, key, order_by.ascending)


def sort_checkpoints(
    checkpoints: Iterable[Checkpoint],
    sort_by: str | CheckpointSortBy | None,
    order_by: OrderBy | str | None,
    max_results: int | None,
    experiment: Mapping[str, Any],
) -> list[Checkpoint]:
    """Determined's ``list_checkpoints`` order: by ``sort_by`` (a :class:`CheckpointSortBy`
    or a validation metric's name) in ``order_by``'s order, both or neither (then by the
    searcher's metric, best first: ``experiment``'s record says which and which way), at
    most ``max_results``. ``AssertionError`` when only one of the two is given, as
    Determined's."""
    if (sort_by is None) != (order_by is None):
        raise AssertionError("sort_by and order_by must be either both set, or neither.")
    metric = experiment.get("searcher_metric")
    if sort_by is None:
        sort_by = CheckpointSortBy.SEARCHER_METRIC
        ascending = bool(experiment.get("smaller_is_better", True))
    else:
        ascending = OrderBy(str(order_by)).ascending
    if not isinstance(sort_by, CheckpointSortBy) and sort_by in CheckpointSortBy.__members__:
        sort_by = CheckpointSortBy(sort_by)
    key: Callable[[Checkpoint], Any]
    if sort_by is CheckpointSortBy.SEARCHER_METRIC or not isinstance(sort_by, CheckpointSortBy):
        name = metric if sort_by is CheckpointSortBy.SEARCHER_METRIC else str(sort_by)
        key = lambda c: c.metric(name) if name else None  # noqa: E731
    else:
        attribute: dict[CheckpointSortBy, Callable[[Checkpoint], Any]] = {
            CheckpointSortBy.UUID: lambda c: c.uuid,
            CheckpointSortBy.TRIAL_ID: lambda c: c.trial_id,
            CheckpointSortBy.BATCH_NUMBER: lambda c: c.total_batches,
            CheckpointSortBy.END_TIME: lambda c: _timestamp(c.created_at),
            CheckpointSortBy.STATE: lambda c: str(c.state),
        }
        key = attribute[sort_by]
    ordered = _ordered(checkpoints, key, ascending)
    return ordered[:max_results] if max_results else ordered


def _timestamp(moment: datetime) -> float:
    return moment.timestamp()
