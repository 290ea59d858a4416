"""The master's REST API: one router per resource under ``/api/v1``."""

from pedl.master.api._app import API_PREFIX, create_app
from pedl.master.api._auth import DEFAULT_USER, TrialPrincipal, UserPrincipal
from pedl.master.api._errors import ApiError
from pedl.master.api._schemas import (
    CheckpointCreate,
    CheckpointPublic,
    ErrorBody,
    ErrorIssue,
    ErrorResponse,
    ExperimentCreate,
    ExperimentPublic,
    Health,
    LogLineCreate,
    LogLinePublic,
    LogsBatch,
    LogsIngested,
    MetricPublic,
    MetricReport,
    MetricsBatch,
    MetricsIngested,
    Page,
    TrialPublic,
)

__all__ = [
    "API_PREFIX",
    "DEFAULT_USER",
    "ApiError",
    "CheckpointCreate",
    "CheckpointPublic",
    "ErrorBody",
    "ErrorIssue",
    "ErrorResponse",
    "ExperimentCreate",
    "ExperimentPublic",
    "Health",
    "LogLineCreate",
    "LogLinePublic",
    "LogsBatch",
    "LogsIngested",
    "MetricPublic",
    "MetricReport",
    "MetricsBatch",
    "MetricsIngested",
    "Page",
    "TrialPrincipal",
    "TrialPublic",
    "UserPrincipal",
    "create_app",
]
