"""The PEDL Python SDK: a thin client of the master's REST API.

Module-level functions use a default client whose master is ``$PEDL_MASTER`` (default
``http://127.0.0.1:8080``; change it with :func:`set_master`); a :class:`Client` binds the
same methods to any master. Every failed request raises :class:`PEDLError` carrying the
master's message, the offending field and every issue. Nothing here imports TensorFlow.
"""

from pedl.client._checkpoint import Checkpoint
from pedl.client._client import (
    Client,
    ConfigSource,
    create_experiment,
    default_client,
    get_checkpoint,
    get_experiment,
    get_trial,
    list_experiments,
    set_master,
)
from pedl.client._errors import ErrorIssue, MasterUnreachableError, NotFoundError, PEDLError
from pedl.client._experiment import TERMINAL_EXPERIMENT_STATES, Experiment
from pedl.client._session import DEFAULT_MASTER, MASTER_ENV, Session, master_url
from pedl.client._trial import TERMINAL_TRIAL_STATES, LogLine, MetricRow, Trial

__all__ = [
    "DEFAULT_MASTER",
    "MASTER_ENV",
    "TERMINAL_EXPERIMENT_STATES",
    "TERMINAL_TRIAL_STATES",
    "Checkpoint",
    "Client",
    "ConfigSource",
    "ErrorIssue",
    "Experiment",
    "LogLine",
    "MasterUnreachableError",
    "MetricRow",
    "NotFoundError",
    "PEDLError",
    "Session",
    "Trial",
    "create_experiment",
    "default_client",
    "get_checkpoint",
    "get_experiment",
    "get_trial",
    "list_experiments",
    "master_url",
    "set_master",
]
