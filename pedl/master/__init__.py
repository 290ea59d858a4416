"""The PEDL master: settings, persistence (:mod:`pedl.master.db`), lifecycle rules
(:mod:`pedl.master.states`) and the REST API (:mod:`pedl.master.api`).

Nothing here imports TensorFlow.
"""

from pedl.master._settings import MasterSettings
from pedl.master.api import create_app

__all__ = ["MasterSettings", "create_app"]
