"""How the SDK's lists sort, under Determined's names: :class:`OrderBy` and a ``SortBy`` per
kind of list, with Determined's deprecated per-list ``OrderBy`` names beside them."""

from __future__ import annotations

from enum import StrEnum


class OrderBy(StrEnum):
    """Ascending or descending (Determined's ``OrderBy``; ``ASCENDING``/``DESCENDING`` too)."""

    ASC = "ASC"
    DESC = "DESC"
    ASCENDING = "ASC"
    DESCENDING = "DESC"

    @property
    def ascending(self) -> bool:
        return self is OrderBy.ASC


ExperimentOrderBy = OrderBy
"""Determined's deprecated name of :class:`OrderBy` for experiments."""
TrialOrderBy = OrderBy
"""Determined's deprecated name of :class:`OrderBy` for trials."""
CheckpointOrderBy = OrderBy
"""Determined's deprecated name of :class:`OrderBy` for checkpoints."""
ModelOrderBy = OrderBy
"""Determined's deprecated name of :class:`OrderBy` for models."""


class ExperimentSortBy(StrEnum):
    """What :func:`list_experiments` sorts by (Determined's names PEDL can sort by)."""

    ID = "ID"
    NAME = "NAME"
    STATE = "STATE"
    PROGRESS = "PROGRESS"
    START_TIME = "START_TIME"
    END_TIME = "END_TIME"
    SEARCHER_METRIC_VAL = "SEARCHER_METRIC_VAL"

    @property
    def column(self) -> str:
        """The API's ``sort`` column."""
        return {
            "START_TIME": "created_at",
            "END_TIME": "ended_at",
            "SEARCHER_METRIC_VAL": "best_validation",
        }.get(self.value, self.value.lower())


class TrialSortBy(StrEnum):
    """What :meth:`Experiment.list_trials` sorts by (Determined's ``TrialSortBy``)."""

    ID = "ID"
    START_TIME = "START_TIME"
    END_TIME = "END_TIME"
    STATE = "STATE"
    BEST_VALIDATION_METRIC = "BEST_VALIDATION_METRIC"
    LATEST_VALIDATION_METRIC = "LATEST_VALIDATION_METRIC"
    BATCHES_PROCESSED = "BATCHES_PROCESSED"
    DURATION = "DURATION"
    RESTARTS = "RESTARTS"
    CHECKPOINT_SIZE = "CHECKPOINT_SIZE"
    LOG_RETENTION_DAYS = "LOG_RETENTION_DAYS"


class CheckpointSortBy(StrEnum):
    """What :meth:`Experiment.list_checkpoints` and :meth:`Trial.list_checkpoints` sort by
    (Determined's ``CheckpointSortBy``; a validation metric's name sorts by that metric)."""

    UUID = "UUID"
    TRIAL_ID = "TRIAL_ID"
    BATCH_NUMBER = "BATCH_NUMBER"
    END_TIME = "END_TIME"
    STATE = "STATE"
    SEARCHER_METRIC = "SEARCHER_METRIC"
