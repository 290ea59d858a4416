"""``determined.experimental.client``: PEDL's SDK (``pedl.client``) under Determined's names.

``client.login(master, user, password)`` chooses the master (and signs in);
``get_experiment``, ``get_trial``, ``get_checkpoint``, ``create_experiment``,
``list_experiments`` (labels, users, name, sort_by/order_by), ``iter_trials_metrics`` and the
``stream_trials_*_metrics`` generators and the model registry (``create_model``,
``get_model``, ``get_models``/``list_models``, ``Model.register_version``,
``Model.get_version(n).checkpoint``) work as in PEDL's SDK; the state enums
(``ExperimentState``, ``TrialState``, ``CheckpointState``) are ``StrEnum``s, so comparing
them with strings works too; and ``Checkpoint.download()`` gives a directory that
``determined.keras.load_model_from_checkpoint_path`` loads.
"""

from __future__ import annotations

from pedl.client import (
    Checkpoint,
    CheckpointState,
    Client,
    Experiment,
    ExperimentSortBy,
    ExperimentState,
    LogLevel,
    Model,
    ModelSortBy,
    ModelVersion,
    OrderBy,
    TrainingMetrics,
    Trial,
    TrialMetrics,
    TrialState,
    ValidationMetrics,
    create_experiment,
    create_model,
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

Determined = Client
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
    "CheckpointState",
    "Determined",
    "Experiment",
    "ExperimentReference",
    "ExperimentSortBy",
    "ExperimentState",
    "LogLevel",
    "Model",
    "ModelSortBy",
    "ModelVersion",
    "OrderBy",
    "TrainingMetrics",
    "Trial",
    "TrialMetrics",
    "TrialReference",
    "TrialState",
    "ValidationMetrics",
    "create_experiment",
    "create_model",
    "get_checkpoint",
    "get_experiment",
    "get_model",
    "get_model_by_id",
    "get_models",
    "get_trial",
    "iter_trials_metrics",
    "list_experiments",
    "list_models",
    "login",
    "stream_trials_training_metrics",
    "stream_trials_validation_metrics",
]
