"""Entry points of trial processes (``python -m pedl.exec.trial``), warm workers
(``python -m pedl.exec.worker``) and the template they can be forked from
(``python -m pedl.exec.template``), their exit codes, :func:`run_attempt`, the one way a
trial is run (by the trial process, a warm worker and local mode), and :class:`Gang`, the one
launcher of a multi-worker trial's processes (the master's resource managers and local
mode); a trial process's line to the master (:class:`MasterClient`, :class:`ReportSender`,
and :class:`RestBackend`, its trial backend)."""

from pedl.exec._attempt import AttemptResult, classify_failure, run_attempt
from pedl.exec._exit_codes import (
    EXIT_ERROR,
    EXIT_MASTER_GONE,
    EXIT_MODEL_DEF_ERROR,
    EXIT_OK,
    is_permanent_failure,
)
from pedl.exec._gang import (
    HEARTBEAT_FD_ENV,
    HEARTBEAT_TIMEOUT_SECONDS,
    STOP_GRACE_SECONDS,
    Gang,
    GangFailure,
    GangPorts,
    WorkerState,
    describe_status,
    free_ports,
    gang_environments,
    pick_ports,
)
from pedl.exec._heartbeat import start_heartbeat
from pedl.exec._master_client import MasterClient, MasterError
from pedl.exec._private import (
    TOKEN_FD_ENV,
    make_undumpable,
    name_process,
    process_alive,
    take_token,
    token_channel,
)
from pedl.exec._report_sender import ReportSender
from pedl.exec._rest import RestBackend
from pedl.exec._system_metrics import Sample, SystemMetricsReporter, start_sampling
from pedl.exec._template import run_template
from pedl.exec._trial_process import (
    die_with_master,
    run_trial,
    serve_trial,
    trial_distributed_context,
)
from pedl.exec._worker import run_worker, serve_trials

__all__ = [
    "EXIT_ERROR",
    "EXIT_MASTER_GONE",
    "EXIT_MODEL_DEF_ERROR",
    "EXIT_OK",
    "HEARTBEAT_FD_ENV",
    "HEARTBEAT_TIMEOUT_SECONDS",
    "STOP_GRACE_SECONDS",
    "TOKEN_FD_ENV",
    "AttemptResult",
    "Gang",
    "GangFailure",
    "GangPorts",
    "MasterClient",
    "MasterError",
    "ReportSender",
    "RestBackend",
    "Sample",
    "SystemMetricsReporter",
    "WorkerState",
    "classify_failure",
    "describe_status",
    "die_with_master",
    "free_ports",
    "gang_environments",
    "is_permanent_failure",
    "make_undumpable",
    "name_process",
    "pick_ports",
    "process_alive",
    "run_attempt",
    "run_template",
    "run_trial",
    "run_worker",
    "serve_trial",
    "serve_trials",
    "start_heartbeat",
    "start_sampling",
    "take_token",
    "token_channel",
    "trial_distributed_context",
]
