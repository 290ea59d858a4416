"""Entry points of trial processes (``python -m pedl.exec.trial``), and their exit codes."""

from pedl.exec._exit_codes import (
    EXIT_ERROR,
    EXIT_MASTER_GONE,
    EXIT_MODEL_DEF_ERROR,
    EXIT_OK,
    is_permanent_failure,
)
from pedl.exec._trial_process import die_with_master, run_trial

__all__ = [
    "EXIT_ERROR",
    "EXIT_MASTER_GONE",
    "EXIT_MODEL_DEF_ERROR",
    "EXIT_OK",
    "die_with_master",
    "is_permanent_failure",
    "run_trial",
]
