"""Run a benchmark trial through PEDL's TFKerasTrialController with in-process stand-ins.

Mirrors ``pedl/local/_smoke.py``: a ``core.Context`` with a ``SharedFSStorage``, a recorder
for metrics and checkpoints, and a searcher session that hands out one length. The recorder
timestamps every training-metrics report, i.e. every chunk boundary, which is how the
throughput benchmark times PEDL without adding a callback to its ``fit``.
"""

from __future__ import annotations

import random
import time
from collections.abc import Mapping
from pathlib import Path
from typing import Any

import bench_trials

from pedl import core
from pedl.config import parse_config, sample_hparams
from pedl.keras import TFKerasTrialController
from pedl.storage import SharedFSStorage

CODE_DIR = Path(bench_trials.__file__).parent
SEED = 1


class Session:
    """Searcher stand-in: one operation to ``length`` batches."""

    def __init__(self, length: int) -> None:
        self._lengths = [length]

    def next_length(self) -> int | None:
        return self._lengths[0] if self._lengths else None

    def complete(self, length: int, searcher_metric: float) -> None:
        self._lengths.clear()


class Recorder:
    """Metrics writer and checkpoint registry.

    ``boundary_times[b]`` / ``boundary_cpu_times[b]``: wall clock / this process's CPU time
    when batch b (a chunk boundary) ended.
    """

    def __init__(self) -> None:
        self.boundary_times: dict[int, float] = {}
        self.boundary_cpu_times: dict[int, float] = {}
        self.checkpoints: list[str] = []

    def write_metrics(
        self, kind: core.MetricKind, total_batches: int, metrics: Mapping[str, float]
    ) -> None:
        if kind == "training":
            self.boundary_times[total_batches] = time.perf_counter()
            self.boundary_cpu_times[total_batches] = time.process_time()

    def register_checkpoint(
        self,
        storage_id: str,
        total_batches: int,
        metadata: Mapping[str, Any],
        resources: Mapping[str, int],
    ) -> None:
        self.checkpoints.append(storage_id)


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
    context = core.build_context(
        info,
        metrics=recorder,
        checkpoints=recorder,
        storage=SharedFSStorage(storage_dir),
        searcher=Session(batches),
    )
    return TFKerasTrialController(bench_trials.BenchTrial, context)
