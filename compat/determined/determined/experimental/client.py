"""``determined.experimental.client``: PEDL's SDK (``pedl.client``) under Determined's names.

``client.login(master, user, password)`` chooses the master (and signs in), and
``Determined(master, user, password)`` is a client of its own; ``get_experiment``,
``get_trial``, ``get_checkpoint``, ``create_experiment``, ``list_experiments`` (labels,
users, name, sort_by/order_by), ``iter_trials_metrics`` and the ``stream_trials_*metrics``
generators, the accounts (``whoami``, ``logout``, ``list_users``, ``create_user``,
``get_user_by_id``/``_by_name``, ``get_session_username``, :class:`User`'s methods) and the
model registry (``create_model``, ``get_model``, ``get_models``/``list_models``,
``get_model_labels``, ``Model.register_version``, ``Model.get_version(n).checkpoint``), and
the workspaces and projects (``create_workspace``, ``get_workspace``, ``list_workspaces``,
``delete_workspace``, :class:`Workspace`, :class:`Project`, ``Experiment.project_id``,
``workspace_id`` and ``move_to_project``) work as in PEDL's SDK.

The state enums have every member Determined's have (``ExperimentState.RUNNING``,
``QUEUED``, ``DELETED``, ...; a PEDL experiment is never in those PEDL does not use) and are
``StrEnum``s, so they compare equal to PEDL's states and to strings:
``exp.wait() == ExperimentState.COMPLETED``. ``Checkpoint.download()`` gives a directory
that ``determined.keras.load_model_from_checkpoint_path`` loads.
"""

from __future__ import annotations

from enum import StrEnum

from pedl.client import (
    Checkpoint,
    CheckpointOrderBy,
    CheckpointSortBy,
    CheckpointTrainingMetadata,
    Determined,
    DownloadMode,
    Experiment,
    ExperimentOrderBy,
    ExperimentSortBy,
    LogLevel,
    Model,
    ModelOrderBy,
    ModelSortBy,
    ModelVersion,
    OrderBy,
    Project,
    TrainingMetrics,
    Trial,
    TrialMetrics,
    TrialOrderBy,
    TrialSortBy,
    User,
    ValidationMetrics,
    Workspace,
    create_experiment,
    create_model,
    create_user,
    create_workspace,
    delete_workspace,
    get_checkpoint,
    get_experiment,
    get_model,
    get_model_by_id,
    get_model_labels,
    get_models,
    get_session_username,
    get_trial,
    get_user_by_id,
    get_user_by_name,
    get_workspace,
    iter_trials_metrics,
    list_experiments,
    list_models,
    list_users,
    list_workspaces,
    logout,
    set_master,
    stream_trials_metrics,
    stream_trials_training_metrics,
    stream_trials_validation_metrics,
    whoami,
)


class ExperimentState(StrEnum):
    """Determined's experiment states (PEDL's are among them, with the same values)."""

    ACTIVE = "ACTIVE"
    PAUSED = "PAUSED"
    STOPPING_COMPLETED = "STOPPING_COMPLETED"
    STOPPING_CANCELED = "STOPPING_CANCELED"
    STOPPING_ERROR = "STOPPING_ERROR"
    COMPLETED = "COMPLETED"
    CANCELED = "CANCELED"
    ERROR = "ERROR"
    DELETED = "DELETED"
    DELETING = "DELETING"
    DELETE_FAILED = "DELETE_FAILED"
    STOPPING_KILLED = "STOPPING_KILLED"
    QUEUED = "QUEUED"
    PULLING = "PULLING"
    STARTING = "STARTING"
    RUNNING = "RUNNING"


class TrialState(StrEnum):
    """Determined's trial states (PEDL's are among them, with the same values)."""

    ACTIVE = "ACTIVE"
    PAUSED = "PAUSED"
    STOPPING_CANCELED = "STOPPING_CANCELED"
    STOPPING_KILLED = "STOPPING_KILLED"
    STOPPING_COMPLETED = "STOPPING_COMPLETED"
    STOPPING_ERROR = "STOPPING_ERROR"
    CANCELED = "CANCELED"
    COMPLETED = "COMPLETED"
    ERROR = "ERROR"
    QUEUED = "QUEUED"
    PULLING = "PULLING"
    STARTING = "STARTING"
    RUNNING = "RUNNING"


class CheckpointState(StrEnum):
    """Determined's checkpoint states (PEDL's are among them, with the same values)."""

    ACTIVE = "ACTIVE"
    COMPLETED = "COMPLETED"
    ERROR = "ERROR"
    DELETED = "DELETED"
    PARTIALLY_DELETED = "PARTIALLY_DELETED"


ExperimentReference = Experiment
TrialReference = Trial


def login(
    master: str | None = None,
    user: str | None = None,
    password: str | None = None,
) -> None:
    """Use ``master`` (default ``$PEDL_MASTER``) for the module's functions; sign in as
    ``user`` when given (else from ``PEDL_USER``/``PEDL_PASSWORD`` or a saved token)."""
    client = set_master(master)
    if user is not None:
        client.login(user, password or "")


__all__ = [
    "Checkpoint",
    "CheckpointOrderBy",
    "CheckpointSortBy",
    "CheckpointState",
    "CheckpointTrainingMetadata",
    "Determined",
    "DownloadMode",
    "Experiment",
    "ExperimentOrderBy",
    "ExperimentReference",
    "ExperimentSortBy",
    "ExperimentState",
    "LogLevel",
    "Model",
    "ModelOrderBy",
    "ModelSortBy",
    "ModelVersion",
    "OrderBy",
    "Project",
    "TrainingMetrics",
    "Trial",
    "TrialMetrics",
    "TrialOrderBy",
    "TrialReference",
    "TrialSortBy",
    "TrialState",
    "User",
    "ValidationMetrics",
    "Workspace",
    "create_experiment",
    "create_model",
    "create_user",
    "create_workspace",
    "delete_workspace",
    "get_checkpoint",
    "get_experiment",
    "get_model",
    "get_model_by_id",
    "get_model_labels",
    "get_models",
    "get_session_username",
    "get_trial",
    "get_user_by_id",
    "get_user_by_name",
    "get_workspace",
    "iter_trials_metrics",
    "list_experiments",
    "list_models",
    "list_users",
    "list_workspaces",
    "login",
    "logout",
    "stream_trials_metrics",
    "stream_trials_training_metrics",
    "stream_trials_validation_metrics",
    "whoami",
]
