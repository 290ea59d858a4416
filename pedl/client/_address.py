"""The master's address: given, or from the environment (``PEDL_MASTER``, ``DET_MASTER``).

Standard library only: the ``pedl`` command reads these names before it knows whether it
will talk to a master at all.
"""

from __future__ import annotations

import os

DEFAULT_MASTER = "http://127.0.0.1:8080"
"""The master used when neither an address nor ``PEDL_MASTER`` is given."""

MASTER_ENV = "PEDL_MASTER"
"""The environment variable naming the master's address."""

DET_MASTER_ENV = "DET_MASTER"
"""Determined's name for it, read when ``PEDL_MASTER`` is not set."""


def master_url(master: str | None = None) -> str:
    """The master's base URL: ``master``, else ``$PEDL_MASTER``, else ``$DET_MASTER``, else
    :data:`DEFAULT_MASTER`.

    ``host:port`` without a scheme means ``http://host:port``; a trailing ``/`` is dropped.
    """
    address = (
        master or os.environ.get(MASTER_ENV) or os.environ.get(DET_MASTER_ENV) or DEFAULT_MASTER
    ).strip()
    if "://" not in address:
        address = "http://" + address
    return address.rstrip("/")
