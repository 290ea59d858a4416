"""Resource managers: where trial processes run (``local``: subprocesses on this machine)."""

from pedl.master.rm._base import ExitHandler, LogSink, ResourceManager, TrialLaunch
from pedl.master.rm._isolation import master_variables, protect_master_process, trial_environment
from pedl.master.rm._local import LocalResourceManager, detect_gpus

__all__ = [
    "ExitHandler",
    "LocalResourceManager",
    "LogSink",
    "ResourceManager",
    "TrialLaunch",
    "detect_gpus",
    "master_variables",
    "protect_master_process",
    "trial_environment",
]
