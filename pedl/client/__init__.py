"""The PEDL Python SDK: a thin client of the master's REST API.

Module-level functions use a default client whose master is ``$PEDL_MASTER`` (default
``http://127.0.0.1:8080``; change it with :func:`set_master`); a :class:`Client` binds the
same methods to any master, signed in from ``PEDL_USER``/``PEDL_PASSWORD`` or with the token
``pedl user login`` saved (:class:`TokenStore`). Every failed request raises
:class:`PEDLError` carrying the master's message, the offending field and every issue.
Nothing here imports TensorFlow.
"""

from pedl.client._checkpoint import Checkpoint
from pedl.client._client import (
    Client,
    ConfigSource,
    ExperimentSortBy,
    OrderBy,
    create_experiment,
    create_model,
    default_client,
    get_checkpoint,
    get_experiment,
    get_model,
    get_model_by_id,
    get_models,
    get_trial,
    iter_trials_metrics,
    list_experiments,
    list_models,
    set_master,
    stream_trials_training_metrics,
    stream_trials_validation_metrics,
)
from pedl.client._errors import (
    ErrorIssue,
    MasterUnreachableError,
    NotFoundError,
    NotSignedInError,
    PEDLError,
)
from pedl.client._experiment import TERMINAL_EXPERIMENT_STATES, Experiment
from pedl.client._model import Model, ModelSortBy, ModelVersion
from pedl.client._session import DEFAULT_MASTER, DET_MASTER_ENV, MASTER_ENV, Session, master_url
from pedl.client._templates import merge_template
from pedl.client._tensorboard import (
    TensorBoard,
    get_tensorboard,
    list_tensorboards,
    start_tensorboard,
    stop_tensorboard,
)
from pedl.client._tokens import (
    CONFIG_DIR_ENV,
    DET_PASSWORD_ENV,
    DET_USER_ENV,
    PASSWORD_ENV,
    USER_ENV,
    SavedToken,
    TokenStore,
    config_dir,
    env_credentials,
)
from pedl.client._trial import (
    TERMINAL_TRIAL_STATES,
    LogLevel,
    LogLine,
    MetricRow,
    SystemSample,
    TrainingMetrics,
    Trial,
    TrialMetrics,
    TrialWorker,
    ValidationMetrics,
)
from pedl.client._user import User
from pedl.engine import CheckpointState, ExperimentState, TrialState

__all__ = [
    "CONFIG_DIR_ENV",
    "DEFAULT_MASTER",
    "DET_MASTER_ENV",
    "DET_PASSWORD_ENV",
    "DET_USER_ENV",
    "MASTER_ENV",
    "PASSWORD_ENV",
    "TERMINAL_EXPERIMENT_STATES",
    "TERMINAL_TRIAL_STATES",
    "USER_ENV",
    "Checkpoint",
    "CheckpointState",
    "Client",
    "ConfigSource",
    "ErrorIssue",
    "Experiment",
    "ExperimentSortBy",
    "ExperimentState",
    "LogLevel",
    "LogLine",
    "MasterUnreachableError",
    "MetricRow",
    "Model",
    "ModelSortBy",
    "ModelVersion",
    "NotFoundError",
    "NotSignedInError",
    "OrderBy",
    "PEDLError",
    "SavedToken",
    "Session",
    "SystemSample",
    "TensorBoard",
    "TokenStore",
    "TrainingMetrics",
    "Trial",
    "TrialMetrics",
    "TrialState",
    "TrialWorker",
    "User",
    "ValidationMetrics",
    "config_dir",
    "create_experiment",
    "create_model",
    "default_client",
    "env_credentials",
    "get_checkpoint",
    "get_experiment",
    "get_model",
    "get_model_by_id",
    "get_models",
    "get_tensorboard",
    "get_trial",
    "iter_trials_metrics",
    "list_experiments",
    "list_models",
    "list_tensorboards",
    "master_url",
    "merge_template",
    "set_master",
    "start_tensorboard",
    "stop_tensorboard",
    "stream_trials_training_metrics",
    "stream_trials_validation_metrics",
]
