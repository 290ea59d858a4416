"""The PEDL master: settings, persistence (:mod:`pedl.db`), lifecycle rules
(:mod:`pedl.engine`), the REST API (:mod:`pedl.master.api`), and the engine that runs
experiments (:mod:`pedl.master.orchestrator`, :mod:`pedl.master.scheduler`,
:mod:`pedl.master.rm`). :func:`serve` runs it all (``pedl master``).

Nothing here imports TensorFlow.
"""

from pedl.master._accounts import prepare_accounts
from pedl.master._serve import master_url, serve
from pedl.master._settings import MasterSettings
from pedl.master.api import create_app

__all__ = ["MasterSettings", "create_app", "master_url", "prepare_accounts", "serve"]
