"""Local mode runs every rank of a multi-worker Keras trial, the chief too, as a fresh
process per attempt (issue 20): the chief's reports reach the run's record over the chief
link, so a run trains several multi-worker Keras trials and restarts one whose worker died
(TensorFlow sets a process's collectives up once, for one TF_CONFIG)."""

from __future__ import annotations

import os
import signal
import threading
import time
from pathlib import Path

import numpy as np
import pytest

from pedl.local import ExperimentSummary, LocalExperiment
from pedl.vocabulary import ExperimentState, TrialState
from tests.waits import scaled

pytestmark = pytest.mark.slow

MODEL_DIR = Path(__file__).parent / "keras_workers_model"
CONFIG = """
name: local-keras-2-workers
entrypoint: model_def:BlobsTrial
hyperparameters:
  global_batch_size: 16
  step_seconds: {step}
  out: {out}
  learning_rate: {learning_rate}
searcher: {{name: {searcher}, metric: val_accuracy, smaller_is_better: false,
           max_length: {{batches: {batches}}}}}
scheduling_unit: 4
min_checkpoint_period: {{batches: 4}}
resources: {{slots_per_trial: 2}}
max_restarts: 2
reproducibility: {{experiment_seed: 3}}
environment: {{environment_variables: {environment}}}
"""


def _run(
    tmp_path: Path,
    *,
    step: float = 0.0,
    batches: int = 8,
    learning_rate: str = "0.02",
    searcher: str = "single",
    during: threading.Thread | None = None,
    environment: str = "[]",
) -> tuple[LocalExperiment, ExperimentSummary]:
    config = tmp_path / "config.yaml"
    config.write_text(
        CONFIG.format(
            step=step,
            out=tmp_path / "weights",
            learning_rate=learning_rate,
            searcher=searcher,
            batches=batches,
            environment=environment,
        )
    )
    run = LocalExperiment.create(config, MODEL_DIR, tmp_path / "runs")
    try:
        if during is not None:
            during.start()
        summary = run.run()
    finally:
        run.close()
    return run, summary


def _final_weights(tmp_path: Path, trial_id: int, rank: int) -> tuple[int, str, list[np.ndarray]]:
    """The process id, strategy and final weights that ``rank`` of the trial saved."""
    with np.load(tmp_path / "weights" / f"trial-{trial_id}-rank-{rank}.npz") as saved:
        weights = [saved[f"w{i}"] for i in range(len(saved.files) - 2)]
        return int(saved["pid"]), str(saved["strategy"]), weights


def _assert_workers_agree(
    tmp_path: Path, trial_id: int, strategy: str = "_DefaultDistributionStrategy"
) -> None:
    """Both ranks ran in processes of their own, with models built under ``strategy`` (by
    default none: every worker on this machine averages through its shared memory), and
    end with the same weights, bit for bit."""
    chief_pid, chief_strategy, chief = _final_weights(tmp_path, trial_id, 0)
    other_pid, other_strategy, other = _final_weights(tmp_path, trial_id, 1)
    assert os.getpid() not in (chief_pid, other_pid) and chief_pid != other_pid
    assert chief_strategy == other_strategy == strategy
    for a, b in zip(chief, other, strict=True):
        np.testing.assert_array_equal(a, b)


def test_a_local_two_worker_keras_trial_runs_its_chief_in_a_fresh_process(
    tmp_path: Path,
) -> None:
    _, summary = _run(tmp_path)
    assert summary.state == ExperimentState.COMPLETED, summary
    (trial,) = summary.trials
    assert trial.state == TrialState.COMPLETED and trial.best_metric is not None
    assert trial.best_checkpoint is not None and trial.best_checkpoint.is_dir()
    _assert_workers_agree(tmp_path, trial.trial_id)


def test_pedl_host_allreduce_0_in_the_config_keeps_the_strategy(tmp_path: Path) -> None:
    # As docs/distributed.md says: set in the experiment's environment_variables.
    _, summary = _run(tmp_path, environment="[PEDL_HOST_ALLREDUCE=0]")
    assert summary.state == ExperimentState.COMPLETED, summary
    (trial,) = summary.trials
    # MultiWorkerMirroredStrategy's class
    _assert_workers_agree(tmp_path, trial.trial_id, "CollectiveAllReduceStrategy")


def test_a_local_search_trains_two_multi_worker_keras_trials(tmp_path: Path) -> None:
    _, summary = _run(
        tmp_path, searcher="grid", learning_rate="{type: categorical, vals: [0.01, 0.02]}"
    )
    assert summary.state == ExperimentState.COMPLETED, summary
    assert len(summary.trials) == 2
    for trial in summary.trials:
        assert trial.state == TrialState.COMPLETED, trial.error
        _assert_workers_agree(tmp_path, trial.trial_id)


def test_a_local_keras_trial_whose_worker_is_killed_restarts_and_completes(
    tmp_path: Path,
) -> None:
    killed: list[int] = []

    def kill_rank_1() -> None:
        """SIGKILL this run's rank 1 once the trial has a checkpoint."""
        checkpoints = tmp_path / "runs" / "exp-1" / "checkpoints"
        deadline = time.monotonic() + scaled(120)
        while not killed and time.monotonic() < deadline:
            if checkpoints.is_dir() and any(checkpoints.iterdir()):
                for environ in Path("/proc").glob("[0-9]*/environ"):
                    try:
                        variables = set(environ.read_bytes().split(b"\0"))
                    except OSError:
                        continue
                    mine = f"PEDL_MASTER_PID={os.getpid()}".encode() in variables
                    if mine and b"PEDL_RANK=1" in variables:
                        os.kill(int(environ.parent.name), signal.SIGKILL)
                        killed.append(int(environ.parent.name))
                        return
            time.sleep(0.05)

    killer = threading.Thread(target=kill_rank_1, daemon=True)
    run, summary = _run(tmp_path, step=0.05, batches=40, during=killer)
    killer.join(timeout=5)
    assert killed, "rank 1 was not found"
    assert summary.state == ExperimentState.COMPLETED, summary
    (trial,) = summary.trials
    assert trial.state == TrialState.COMPLETED, trial.error
    assert run.trial(trial.trial_id).restarts == 1
    _assert_workers_agree(tmp_path, trial.trial_id)
