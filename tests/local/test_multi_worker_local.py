"""Local mode runs a trial of ``slots_per_trial: 2`` as two ``python -m pedl.local.worker``
processes (the chief, rank 0, and rank 1) started by the master's launcher
(pedl.exec.Gang); a killed worker ends the attempt and the trial restarts from its
checkpoint. The model is the framework-free one of tests/master/gang_model."""

from __future__ import annotations

import json
import os
import re
import signal
import threading
import time
from pathlib import Path

import pytest

from pedl.local import LocalExperiment
from pedl.vocabulary import ExperimentState, TrialState
from tests.waits import scaled

MODEL_DIR = Path(__file__).parent.parent / "master" / "gang_model"
CONFIG = """
name: local-gang
entrypoint: model_def:GangTrial
hyperparameters: {{period: 5, step_seconds: {step}}}
searcher: {{name: single, metric: val_loss, max_length: {{batches: 20}}}}
resources: {{slots_per_trial: 2}}
max_restarts: 2
"""


def _create(tmp_path: Path, step: float) -> LocalExperiment:
    config = tmp_path / "config.yaml"
    config.write_text(CONFIG.format(step=step))
    return LocalExperiment.create(config, MODEL_DIR, tmp_path / "runs")


def test_a_local_run_trains_a_trial_on_two_worker_processes(
    tmp_path: Path, capfd: pytest.CaptureFixture[str]
) -> None:
    run = _create(tmp_path, 0.02)
    try:
        summary = run.run()
    finally:
        run.close()
    assert summary.state == ExperimentState.COMPLETED
    (trial,) = summary.trials
    assert trial.state == TrialState.COMPLETED
    err = capfd.readouterr().err
    (worker,) = re.findall(r"^\[rank 1\] gang-worker (.*)$", err, re.MULTILINE)
    info = json.loads(worker)
    assert info["rank"] == 1 and info["size"] == 2 and info["ranks"] == [0, 1]
    assert info["pid"] != os.getpid()
    assert info["tf_config"]["task"] == {"type": "worker", "index": 1}
    assert "[rank 1] rank 1 done at batch 20" in err


def test_a_killed_local_worker_restarts_the_trial_from_its_checkpoint(
    tmp_path: Path, capfd: pytest.CaptureFixture[str]
) -> None:
    run = _create(tmp_path, 0.1)
    killed: list[int] = []

    def kill_rank_1() -> None:
        """SIGKILL the rank-1 worker once the trial has a checkpoint."""
        checkpoints = run.directory / "checkpoints"
        deadline = time.monotonic() + scaled(60)
        while time.monotonic() < deadline:
            if checkpoints.is_dir() and any(checkpoints.iterdir()):
                for path in Path("/proc").glob("[0-9]*/environ"):
                    try:  # only this run's workers (another run may be going on)
                        variables = set(path.read_bytes().split(b"\0"))
                        if f"PEDL_MASTER_PID={os.getpid()}".encode() not in variables:
                            continue
                        pid = int(path.parent.name)
                        os.kill(pid, signal.SIGKILL)
                    except OSError:
                        continue
                    killed.append(pid)
                    return
            time.sleep(0.05)

    killer = threading.Thread(target=kill_rank_1, daemon=True)
    killer.start()
    try:
        summary = run.run()
    finally:
        run.close()
    killer.join(timeout=5)
    assert killed, "no worker process was found"
    (trial,) = summary.trials
    assert summary.state == ExperimentState.COMPLETED, capfd.readouterr().err[-3000:]
    assert trial.state == TrialState.COMPLETED
    assert run.trial(trial.trial_id).restarts == 1
    err = capfd.readouterr().err
    assert "[rank 1] rank 1 restored batch" in err
