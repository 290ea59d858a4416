"""Resource managers: where trial processes run (``local``: subprocesses on this machine)."""

from pedl.master.rm._base import (
    ExitHandler,
    IdleWorker,
    LogSink,
    ResourceManager,
    TrialLaunch,
    WorkerExit,
)
from pedl.master.rm._isolation import master_variables, protect_master_process, trial_environment
from pedl.master.rm._local import LocalResourceManager, detect_gpus
from pedl.master.rm._ray import RayResourceManager
from pedl.master.rm._trial_user import TrialUser, storage_directory, trial_user_for

__all__ = [
    "ExitHandler",
    "IdleWorker",
    "LocalResourceManager",
    "LogSink",
    "RayResourceManager",
    "ResourceManager",
    "TrialLaunch",
    "TrialUser",
    "WorkerExit",
    "detect_gpus",
    "master_variables",
    "protect_master_process",
    "storage_directory",
    "trial_environment",
    "trial_user_for",
]
