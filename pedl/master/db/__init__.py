"""The master's persistence: models, engine, migrations, and one repository module per resource.

Every query lives in a repository module (:mod:`~pedl.master.db.experiments`,
:mod:`~pedl.master.db.trials`, :mod:`~pedl.master.db.metrics`,
:mod:`~pedl.master.db.checkpoints`, :mod:`~pedl.master.db.logs`,
:mod:`~pedl.master.db.searcher`, :mod:`~pedl.master.db.users`,
:mod:`~pedl.master.db.templates`); each function takes a
:class:`~sqlalchemy.orm.Session` from :meth:`Database.session` and never commits (the
caller's ``with`` block does).
:class:`MetricIngestor` group-commits concurrent metric reports through one writer thread.
"""

from pedl.master.db import (
    checkpoints,
    experiments,
    logs,
    metrics,
    searcher,
    system_metrics,
    templates,
    trials,
    users,
)
from pedl.master.db._database import Database
from pedl.master.db._det_models import ArchivedExperiment, Template
from pedl.master.db._engine import WRITE_OPTION, make_engine, normalize_url
from pedl.master.db._errors import ConflictError, NotFoundError
from pedl.master.db._experiment_store import SQLExperimentStore
from pedl.master.db._ingest import IngestUnavailableError, MetricIngestor, TrialTokenError
from pedl.master.db._migrate import current_revision, head_revision, upgrade
from pedl.master.db._models import (
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
from pedl.master.db._system_models import SystemMetric
from pedl.master.db.logs import LogLine
from pedl.master.db.metrics import MetricRow, TrialSeries

__all__ = [
    "WRITE_OPTION",
    "ArchivedExperiment",
    "Base",
    "Checkpoint",
    "ConflictError",
    "Database",
    "Experiment",
    "IngestUnavailableError",
    "LogLine",
    "Metric",
    "MetricIngestor",
    "MetricRow",
    "ModelDefinition",
    "NotFoundError",
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
    "checkpoints",
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
]
