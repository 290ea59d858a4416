"""The master's persistence: models, engine, migrations, and one repository module per resource.

Every query lives in a repository module (:mod:`~pedl.db.experiments`, :mod:`~pedl.db.trials`,
:mod:`~pedl.db.metrics`, :mod:`~pedl.db.checkpoints`, :mod:`~pedl.db.logs`,
:mod:`~pedl.db.searcher`, :mod:`~pedl.db.users`, :mod:`~pedl.db.templates`,
:mod:`~pedl.db.workspaces`, :mod:`~pedl.db.cluster_messages`, :mod:`~pedl.db.agents`); each
function takes a :class:`~sqlalchemy.orm.Session` from :meth:`Database.session` and never
commits (the caller's ``with`` block does). :class:`MetricIngestor` group-commits concurrent
metric reports through one writer thread.
"""

from pedl.db import (
    agents,
    checkpoints,
    cluster_messages,
    experiments,
    logs,
    metrics,
    searcher,
    system_metrics,
    templates,
    trials,
    users,
    workspaces,
)
from pedl.db._agent_models import DisabledSlot
from pedl.db._database import Database
from pedl.db._det_models import ArchivedExperiment, ClusterMessage, Template
from pedl.db._engine import WRITE_OPTION, make_engine, normalize_url
from pedl.db._errors import ConflictError, NotFoundError
from pedl.db._experiment_store import SQLExperimentStore
from pedl.db._ingest import (
    CheckedReport,
    IngestUnavailableError,
    MetricIngestor,
    TrialTokenError,
    check_report,
)
from pedl.db._migrate import current_revision, head_revision, upgrade
from pedl.db._models import (
    Base,
    Checkpoint,
    Experiment,
    Metric,
    ModelDefinition,
    SearcherEvent,
    SearcherSnapshot,
    Trial,
    TrialLog,
    User,
    UserSession,
)
from pedl.db._system_models import SystemMetric
from pedl.db._workspace_models import Project, Workspace
from pedl.db.logs import LogLine
from pedl.db.metrics import MetricRow, TrialSeries

__all__ = [
    "WRITE_OPTION",
    "ArchivedExperiment",
    "Base",
    "CheckedReport",
    "Checkpoint",
    "ClusterMessage",
    "ConflictError",
    "Database",
    "DisabledSlot",
    "Experiment",
    "IngestUnavailableError",
    "LogLine",
    "Metric",
    "MetricIngestor",
    "MetricRow",
    "ModelDefinition",
    "NotFoundError",
    "Project",
    "SQLExperimentStore",
    "SearcherEvent",
    "SearcherSnapshot",
    "SystemMetric",
    "Template",
    "Trial",
    "TrialLog",
    "TrialSeries",
    "TrialTokenError",
    "User",
    "UserSession",
    "Workspace",
    "agents",
    "check_report",
    "checkpoints",
    "cluster_messages",
    "current_revision",
    "experiments",
    "head_revision",
    "logs",
    "make_engine",
    "metrics",
    "normalize_url",
    "searcher",
    "system_metrics",
    "templates",
    "trials",
    "upgrade",
    "users",
    "workspaces",
]
