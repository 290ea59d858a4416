"""``determined.experimental.client``: PEDL's SDK (``pedl.client``) under Determined's names.

``client.login(master, user, password)`` chooses the master (and signs in);
``get_experiment``, ``get_trial``, ``get_checkpoint``, ``create_experiment`` work as in
PEDL's SDK, and ``Checkpoint.download()`` gives a directory that
``determined.keras.load_model_from_checkpoint_path`` loads.
"""

from __future__ import annotations

from pedl.client import (
    Checkpoint,
    Client,
    Experiment,
    Trial,
    create_experiment,
    get_checkpoint,
    get_experiment,
    get_trial,
    list_experiments,
    set_master,
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
    "Determined",
    "ExperimentReference",
    "TrialReference",
    "create_experiment",
    "get_checkpoint",
    "get_experiment",
    "get_trial",
    "list_experiments",
    "login",
]
