"""What a trial process's exit status tells the master."""

EXIT_OK = 0
"""The trial completed, was preempted (checkpointed) or stopped itself: nothing to retry."""
EXIT_ERROR = 1
"""The trial's code raised (the traceback is in its output): restart up to max_restarts."""
EXIT_MODEL_DEF_ERROR = 3
"""The model definition cannot be loaded (syntax or import error, no Trial class): a restart
would fail the same way, so the trial errors at once."""
EXIT_MASTER_GONE = 4
"""The master died or stopped answering, or revoked this process's token."""


def is_permanent_failure(returncode: int) -> bool:
    """Whether restarting a process that exited with ``returncode`` cannot help."""
    return returncode == EXIT_MODEL_DEF_ERROR
