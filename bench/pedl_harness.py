"""Run a benchmark trial through PEDL's TFKerasTrialController with in-process stand-ins.

Mirrors ``pedl/local/_smoke.py``: a ``core.Context`` with a ``SharedFSStorage`` and a trial
backend (the recorder) that keeps checkpoints and hands out one length. The recorder
timestamps every training-metrics report, i.e. every chunk boundary, which is how the
throughput benchmark times PEDL without adding a callback to its ``fit``.
"""

from __future__ import annotations

import random
import time
from collections.abc import Mapping
from pathlib import Path

import bench_trials

from pedl import core
from pedl.config import parse_config, sample_hparams
from pedl.keras import TFKerasTrialController
from pedl.storage import SharedFSStorage

CODE_DIR = Path(bench_trials.__file__).parent
SEED = 1


class Recorder(core.MemoryBackend):
    """The in-memory trial backend (one searcher operation, to the length
    :func:`make_controller` gives), timing every chunk boundary.

    ``boundary_times[b]`` / ``boundary_cpu_times[b]``: wall clock / this process's CPU time
    when batch b (a chunk boundary) ended.
    """

    def __init__(self) -> None:
        super().__init__()
        self.boundary_times: dict[int, float] = {}
        self.boundary_cpu_times: dict[int, float] = {}

    def write_metrics(
        self,
        kind: core.MetricKind,
        total_batches: int,
        metrics: Mapping[str, float],
        total_epochs: float | None = None,
    ) -> None:
        if kind == core.MetricKind.TRAINING:
            self.boundary_times[total_batches] = time.perf_counter()
            self.boundary_cpu_times[total_batches] = time.process_time()
        super().write_metrics(kind, total_batches, metrics, total_epochs)


def make_controller(
    case: str,
    batches: int,
    storage_dir: Path,
    recorder: Recorder,
    *,
    checkpoint_policy: str = "none",
    latest_checkpoint: str | None = None,
) -> TFKerasTrialController:
    """A controller for ``case`` that trains to ``batches`` with default scheduling_unit."""
    config = parse_config(
        {
            "searcher": {
                "name": "single",
                "metric": "val_loss",
                "max_length": {"batches": batches},
            },
            "hyperparameters": {
                "global_batch_size": bench_trials.BATCH_SIZE[case],
                "case": case,
            },
            "checkpoint_policy": checkpoint_policy,
            "reproducibility": {"experiment_seed": SEED},
            "checkpoint_storage": {"type": "shared_fs", "host_path": str(storage_dir)},
        }
    )
    info = core.TrialInfo(
        trial_id=1,
        experiment_id=0,
        hparams=sample_hparams(config.hyperparameters, random.Random(0)),
        trial_seed=config.reproducibility.experiment_seed,
        config=config,
        code_dir=CODE_DIR,
        latest_checkpoint=latest_checkpoint,
    )
    recorder.lengths = [batches]
    context = core.build_context(info, backend=recorder, storage=SharedFSStorage(storage_dir))
    return TFKerasTrialController(bench_trials.BenchTrial, context)
