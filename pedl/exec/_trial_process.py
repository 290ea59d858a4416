"""The trial process: fetch the trial, load its model definition, run its controller.

Kept lean: nothing heavy is imported before the model definition (which imports the
framework), so the time from launch to the first batch is mostly the framework's import.
"""

from __future__ import annotations

import contextlib
import ctypes
import logging
import os
import shutil
import signal
import sys
import tempfile
import threading
import time
import traceback
from collections.abc import Mapping
from pathlib import Path
from typing import Any

from pedl import core, model_def
from pedl.config import parse_config
from pedl.exec._attempt import AttemptResult, classify_failure, run_attempt
from pedl.exec._event_uploads import EventUploads
from pedl.exec._exit_codes import EXIT_ERROR, EXIT_MASTER_GONE, EXIT_MODEL_DEF_ERROR, EXIT_OK
from pedl.exec._heartbeat import start_heartbeat
from pedl.exec._master_client import MasterClient, MasterError
from pedl.exec._private import make_undumpable, process_alive, take_token
from pedl.exec._report_sender import ReportSender
from pedl.exec._rest import RestBackend
from pedl.exec._system_metrics import (
    SEND_PATIENCE_S,
    Sample,
    SystemMetricsReporter,
    start_sampling,
)
from pedl.storage import make_storage
from pedl.vocabulary import TrialOutcome

logger = logging.getLogger("pedl.exec")

_PR_SET_PDEATHSIG = 1
_WATCHDOG_SECONDS = 2.0
_WORKDIR_PREFIX = "pedl-trial-"


def die_with_master(master_pid: int | None = None, *, watch: bool = True) -> None:
    """Make this process exit when the master that started it dies.

    On Linux the kernel sends SIGKILL when the parent dies (``PR_SET_PDEATHSIG``); on every
    platform a daemon thread checks the parent pid every 2 s (not with ``watch`` false: a
    process that forks keeps itself free of threads, and checks itself). If the master is
    already gone (the parent is not ``master_pid``), exit at once. ``master_pid`` defaults to
    ``PEDL_MASTER_PID``; without either, nothing is done.
    """
    if master_pid is None:
        raw = os.environ.get("PEDL_MASTER_PID")
        if not raw:
            return
        master_pid = int(raw)
    if sys.platform.startswith("linux"):
        try:
            libc = ctypes.CDLL(None, use_errno=True)
            libc.prctl(_PR_SET_PDEATHSIG, signal.SIGKILL, 0, 0, 0)
        except (OSError, AttributeError):
            pass
    if os.getppid() != master_pid:
        os._exit(EXIT_MASTER_GONE)
    if not watch:
        return

    def check() -> None:
        while True:
            time.sleep(_WATCHDOG_SECONDS)
            if os.getppid() != master_pid:
                os._exit(EXIT_MASTER_GONE)

    threading.Thread(target=check, name="pedl-master-watchdog", daemon=True).start()


def run_trial() -> int:
    """Run one trial process for the master (environment as set by the resource manager).

    The attempt's result (:func:`pedl.exec.run_attempt`) is reported to the master
    (``POST /trials/{id}/exit``) before the process exits. Returns the exit status:
    :data:`EXIT_OK` when the trial completed, was preempted, stopped itself or rejected its
    hyperparameters; :data:`EXIT_MODEL_DEF_ERROR` when the model definition cannot be
    loaded; :data:`EXIT_ERROR` when the trial raised; :data:`EXIT_MASTER_GONE` when the
    master is unreachable or revoked this process. An error's traceback is printed to stderr
    once, which the resource manager ships into the trial's logs.

    First the process makes itself non-dumpable (:func:`make_undumpable`) and reads its token
    from the socket ``PEDL_TRIAL_TOKEN_FD`` names (:func:`take_token`), so the token is in no
    environment that the model code's subprocesses inherit; without it (a trial run by hand),
    ``PEDL_TRIAL_TOKEN`` is used.

    A worker of a multi-worker trial (``PEDL_SIZE`` > 1) also writes its heartbeat to the
    pipe ``PEDL_HEARTBEAT_FD`` names (:func:`pedl.exec.start_heartbeat`).
    """
    make_undumpable()
    try:
        token = take_token()
    except ValueError as err:
        print(f"pedl trial: {err}", file=sys.stderr)
        return EXIT_MASTER_GONE
    die_with_master()
    start_heartbeat()
    configure_logging()
    return serve_trial(token)


def configure_logging() -> None:
    """INFO lines of ``pedl`` (and the user's loggers) to stderr, httpx's only from WARNING."""
    logging.basicConfig(
        level=logging.INFO,
        stream=sys.stderr,
        format="%(asctime)s %(levelname)s %(name)s: %(message)s",
    )
    logging.getLogger("httpx").setLevel(logging.WARNING)


def serve_trial(token: str | None = None) -> int:
    """Run the trial named by the environment in this (set-up) process, with its ``token``
    (default ``PEDL_TRIAL_TOKEN``): what :func:`run_trial` does after the process-wide set-up;
    a warm worker calls it once per trial. Returns the exit status :func:`run_trial`
    documents.

    The trial's reports go through a :class:`~pedl.ReportSender`, so training goes on
    while the master cannot be reached; they are all sent before the exit report (a trial
    that cannot send them within the client's patience ends with :data:`EXIT_MASTER_GONE`).
    """
    try:
        client = MasterClient.from_env(token=token)
    except (MasterError, ValueError) as err:
        print(f"pedl trial: {err}", file=sys.stderr)
        return EXIT_MASTER_GONE
    workdir = make_workdir(client.trial_id)
    sender = ReportSender(client)
    system = start_system_metrics(client)
    try:
        return _run(client, sender, workdir, system)
    except MasterError:
        traceback.print_exc()
        return EXIT_MASTER_GONE
    except BaseException:
        # Stopped by SystemExit or KeyboardInterrupt: what was reported before still counts.
        with contextlib.suppress(MasterError):
            sender.flush()
        raise
    finally:
        if system is not None:
            system.stop()
        sender.close()
        shutil.rmtree(workdir, ignore_errors=True)
        client.close()


def start_system_metrics(client: MasterClient) -> SystemMetricsReporter | None:
    """Start sampling this process's system metrics (see :mod:`pedl.exec._system_metrics`)
    for the trial, reported as this process's rank (``PEDL_RANK``, default 0); ``None`` when
    ``PEDL_SYSTEM_METRICS_INTERVAL`` is 0 or wrong (said in the trial's log)."""
    rank = int(os.environ.get("PEDL_RANK") or 0)
    path = f"{client.trial_path}/system-metrics"

    def send(samples: list[Sample]) -> None:
        client.post(path, {"rank": rank, "samples": samples}, give_up_after=SEND_PATIENCE_S)

    return start_sampling(send)


def make_workdir(trial_id: int, base: str | Path | None = None) -> Path:
    """A fresh work directory for this process: ``pedl-trial-{trial_id}-{pid}-*`` under
    ``base`` (default ``PEDL_TRIAL_WORKDIR``, else the system's temporary directory).

    A process that is SIGKILLed cannot remove its work directory, so first the work
    directories of processes that no longer exist are removed (their pid is in the name).
    """
    if base is None:
        base = os.environ.get("PEDL_TRIAL_WORKDIR") or tempfile.gettempdir()
    root = Path(base)
    root.mkdir(parents=True, exist_ok=True)
    remove_stale_workdirs(root)
    return Path(tempfile.mkdtemp(prefix=f"{_WORKDIR_PREFIX}{trial_id}-{os.getpid()}-", dir=root))


def remove_stale_workdirs(root: Path) -> list[Path]:
    """Remove the trial work directories under ``root`` whose process is gone; return them."""
    removed = []
    for path in root.glob(f"{_WORKDIR_PREFIX}*"):
        parts = path.name[len(_WORKDIR_PREFIX) :].split("-")
        if len(parts) < 3 or not parts[1].isdigit() or not path.is_dir():
            continue
        pid = int(parts[1])
        if pid == os.getpid() or process_alive(pid):
            continue
        shutil.rmtree(path, ignore_errors=True)
        removed.append(path)
    return removed


def _run(
    client: MasterClient,
    sender: ReportSender,
    workdir: Path,
    system: SystemMetricsReporter | None = None,
) -> int:
    start = client.get(f"{client.trial_path}/start")
    experiment_id = int(start["experiment_id"])
    code_dir = workdir / "code"
    try:
        archive = client.get_bytes(f"/experiments/{experiment_id}/model_definition")
        model_def.extract(archive, code_dir)
        config = parse_config(start["config"])
    except MasterError:
        raise
    except Exception as err:
        return _finish(
            client, sender, classify_failure(err, code_dir=code_dir, stage="load"), system=system
        )
    logger.info(
        "trial %d (experiment %d), hparams %s, %s",
        client.trial_id,
        experiment_id,
        start["hparams"],
        f"resuming from checkpoint {start['latest_checkpoint']}"
        if start.get("latest_checkpoint")
        else "starting fresh",
    )
    os.chdir(code_dir)
    distributed = trial_distributed_context()
    tensorboard_dir = workdir / "tensorboard"

    def build_context() -> core.Context:
        info = core.TrialInfo(
            trial_id=client.trial_id,
            experiment_id=experiment_id,
            hparams=dict(start["hparams"]),
            trial_seed=int(start["seed"]),
            config=config,
            code_dir=code_dir,
            latest_checkpoint=start.get("latest_checkpoint"),
            warm_start_checkpoint=start.get("warm_start_checkpoint"),
            extra={"tensorboard_dir": str(tensorboard_dir)},
        )
        return core.build_context(
            info,
            backend=RestBackend(client, sender),
            storage=make_storage(config.checkpoint_storage),
            distributed=distributed,
        )

    uploads: contextlib.AbstractContextManager[object] = contextlib.nullcontext()
    if distributed.is_chief:  # its TensorBoard files, for `pedl tensorboard`
        try:
            storage = make_storage(config.checkpoint_storage)
        except Exception as err:  # the attempt itself says why (its context needs it too)
            logger.warning("TensorBoard files will not be uploaded: %s", err)
        else:
            uploads = EventUploads(storage, client.trial_id, tensorboard_dir)
    try:
        with uploads:
            result = run_attempt(code_dir, config.entrypoint, build_context)
    finally:
        distributed.close()
    return _finish(client, sender, result, is_chief=distributed.is_chief, system=system)


def trial_distributed_context(environ: Mapping[str, str] | None = None) -> core.DistributedContext:
    """The trial's :class:`~pedl.core.DistributedContext`: from the launcher's variables
    (:meth:`~pedl.core.DistributedContext.from_env`) when ``PEDL_SIZE`` > 1, else the
    single-process one. Its connections are made on the first collective."""
    env = os.environ if environ is None else environ
    if int(env.get("PEDL_SIZE") or 1) > 1:
        return core.DistributedContext.from_env(env)
    return core.DistributedContext.single()


def _finish(
    client: MasterClient,
    sender: ReportSender,
    result: AttemptResult,
    *,
    is_chief: bool = True,
    system: SystemMetricsReporter | None = None,
) -> int:
    """Print an error once, send the queued reports and the last system metrics, report the
    result to the master (the chief only: another worker's exit is its launcher's business),
    and return the exit status."""
    error = result.error
    if result.outcome is TrialOutcome.ERRORED and error is not None:
        if result.stage == "load":
            print("pedl trial: the model definition cannot be loaded:", file=sys.stderr)
        print(error.traceback.rstrip() or error.summary(), file=sys.stderr)
        if error.traceback and error.message not in error.traceback:
            print(error.summary(), file=sys.stderr)  # e.g. what to install
    elif error is not None:
        logger.info("trial %d: %s: %s", client.trial_id, result.outcome.value, error.summary())
    body = {
        "outcome": result.outcome.value,
        "error": _without_nul(error.to_dict()) if error is not None else None,
    }
    sender.flush()
    if system is not None:
        system.stop()  # before the exit report, which ends the trial's token
    if not is_chief:
        logger.info("trial %d worker stopped: %s", client.trial_id, result.outcome.value)
        return EXIT_OK if result.outcome is not TrialOutcome.ERRORED else EXIT_ERROR
    try:
        client.post(f"{client.trial_path}/exit", body)
    except MasterError as err:
        if err.status is None or err.status == 401:
            raise
        # The master refused the report (e.g. an older master): it still sees the exit code.
        logger.warning("the master did not take the trial's outcome: %s", err)
    logger.info("trial %d stopped: %s", client.trial_id, result.outcome.value)
    if result.outcome is not TrialOutcome.ERRORED:
        return EXIT_OK
    return EXIT_MODEL_DEF_ERROR if result.stage == "load" else EXIT_ERROR


def _without_nul(data: dict[str, Any]) -> dict[str, Any]:
    """The master refuses NUL characters in text; an error message may hold them."""
    return {k: v.replace("\x00", "\\x00") if isinstance(v, str) else v for k, v in data.items()}
