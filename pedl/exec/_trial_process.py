"""The trial process: fetch the trial, load its model definition, run its controller.

Kept lean: nothing heavy is imported before the model definition (which imports the
framework), so the time from launch to the first batch is mostly the framework's import.
"""

from __future__ import annotations

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
from pathlib import Path

from pedl import core, model_def
from pedl._trial import TrialOutcome
from pedl.config import parse_config
from pedl.exec._exit_codes import EXIT_ERROR, EXIT_MASTER_GONE, EXIT_MODEL_DEF_ERROR, EXIT_OK
from pedl.storage import make_storage

logger = logging.getLogger("pedl.exec")

_PR_SET_PDEATHSIG = 1
_WATCHDOG_SECONDS = 2.0


def die_with_master(master_pid: int | None = None) -> None:
    """Make this process exit when the master that started it dies.

    On Linux the kernel sends SIGKILL when the parent dies (``PR_SET_PDEATHSIG``); on every
    platform a daemon thread checks the parent pid every 2 s. If the master is already gone
    (the parent is not ``master_pid``), exit at once. ``master_pid`` defaults to
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

    def watch() -> None:
        while True:
            time.sleep(_WATCHDOG_SECONDS)
            if os.getppid() != master_pid:
                os._exit(EXIT_MASTER_GONE)

    threading.Thread(target=watch, name="pedl-master-watchdog", daemon=True).start()


def run_trial() -> int:
    """Run one trial process for the master (environment as set by the resource manager).

    Returns the exit status: 0 when the controller returns (completed, preempted or stopped
    by the model), :data:`EXIT_MODEL_DEF_ERROR` when the model definition cannot be loaded,
    :data:`EXIT_ERROR` when the trial raises, :data:`EXIT_MASTER_GONE` when the master is
    unreachable or revoked this process. Every failure prints its traceback to stderr, which
    the resource manager ships into the trial's logs.
    """
    die_with_master()
    logging.basicConfig(
        level=logging.INFO,
        stream=sys.stderr,
        format="%(asctime)s %(levelname)s %(name)s: %(message)s",
    )
    logging.getLogger("httpx").setLevel(logging.WARNING)
    try:
        client = core.MasterClient.from_env()
    except (core.MasterError, ValueError) as err:
        print(f"pedl trial: {err}", file=sys.stderr)
        return EXIT_MASTER_GONE
    workdir = Path(tempfile.mkdtemp(prefix=f"pedl-trial-{client.trial_id}-"))
    try:
        return _run(client, workdir)
    except core.MasterError:
        traceback.print_exc()
        return EXIT_MASTER_GONE
    finally:
        shutil.rmtree(workdir, ignore_errors=True)
        client.close()


def _run(client: core.MasterClient, workdir: Path) -> int:
    start = client.get(f"{client.trial_path}/start")
    experiment_id = int(start["experiment_id"])
    code_dir = workdir / "code"
    try:
        archive = client.get_bytes(f"/experiments/{experiment_id}/model_definition")
        model_def.extract(archive, code_dir)
        config = parse_config(start["config"])
        definition = model_def.load(code_dir, config.entrypoint)
        if definition.trial_class is None:
            raise model_def.ModelDefError(
                "the cluster runs Trial classes; this model definition has none "
                f"(entrypoint {config.entrypoint!r})"
            )
    except core.MasterError:
        raise
    except Exception:
        print("pedl trial: the model definition cannot be loaded:", file=sys.stderr)
        traceback.print_exc()
        return EXIT_MODEL_DEF_ERROR
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
    info = core.TrialInfo(
        trial_id=client.trial_id,
        experiment_id=experiment_id,
        hparams=dict(start["hparams"]),
        trial_seed=int(start["seed"]),
        config=config,
        code_dir=code_dir,
        latest_checkpoint=start.get("latest_checkpoint"),
    )
    context = core.build_context(
        info,
        metrics=core.RestMetricsWriter(client),
        checkpoints=core.RestCheckpointRegistry(client),
        storage=make_storage(config.checkpoint_storage),
        searcher=core.RestSearcherSession(client),
        should_preempt=core.RestPreemption(client).should_preempt,
    )
    try:
        controller = definition.trial_class.trial_controller_class.from_definition(
            definition, context
        )
        outcome: TrialOutcome = controller.run()
    except core.MasterError:
        raise
    except Exception:
        traceback.print_exc()
        return EXIT_ERROR
    logger.info("trial %d stopped: %s", client.trial_id, outcome.value)
    return EXIT_OK
