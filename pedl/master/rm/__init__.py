"""Resource managers: where trial processes run (``local``: subprocesses on this machine)."""

from pedl.master.rm._base import ExitHandler, LogSink, ResourceManager, TrialLaunch, WorkerExit
from pedl.master.rm._gang import (
    HEARTBEAT_FD_ENV,
    Gang,
    GangFailure,
    GangPorts,
    WorkerState,
    free_ports,
    gang_environments,
    pick_ports,
)
from pedl.master.rm._isolation import master_variables, protect_master_process, trial_environment
from pedl.master.rm._local import LocalResourceManager, detect_gpus
from pedl.master.rm._ray import RayResourceManager
from pedl.master.rm._trial_user import TrialUser, storage_directory, trial_user_for

__all__ = [
    "HEARTBEAT_FD_ENV",
    "ExitHandler",
    "Gang",
    "GangFailure",
    "GangPorts",
    "LocalResourceManager",
    "LogSink",
    "RayResourceManager",
    "ResourceManager",
    "TrialLaunch",
    "TrialUser",
    "WorkerExit",
    "WorkerState",
    "detect_gpus",
    "free_ports",
    "gang_environments",
    "master_variables",
    "pick_ports",
    "protect_master_process",
    "storage_directory",
    "trial_environment",
    "trial_user_for",
]
