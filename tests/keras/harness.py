"""In-memory stand-ins for the platform side of a trial, for controller tests."""

from __future__ import annotations

from collections.abc import Callable, Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from pedl import core
from pedl.config import parse_config
from pedl.keras import TFKerasTrialController
from pedl.storage import SharedFSStorage

BASE_CONFIG = """
hyperparameters:
  global_batch_size: 16
searcher:
  name: single
  metric: val_accuracy
  smaller_is_better: false
  max_length: {batches: 20}
reproducibility: {experiment_seed: 1}
"""


@dataclass
class Run:
    context: core.Context
    recorder: core.MemoryBackend
    session: core.MemoryBackend
    """The recorder itself (the backend's searcher side), by the name the tests read."""
    storage: SharedFSStorage


def make_run(
    tmp_path: Path,
    config: str = BASE_CONFIG,
    *,
    overrides: tuple[str, ...] = (),
    hparams: Mapping[str, Any] | None = None,
    lengths: list[int] | None = None,
    latest_checkpoint: str | None = None,
    preempt: Callable[[], bool] = lambda: False,
    recorder: core.MemoryBackend | None = None,
    distributed: core.DistributedContext | None = None,
) -> Run:
    cfg = parse_config(config, overrides=overrides)
    code_dir = tmp_path / "code"
    code_dir.mkdir(parents=True, exist_ok=True)
    (code_dir / "model.py").write_text("# the model definition\n")
    values = dict(hparams) if hparams is not None else {"global_batch_size": 16}
    info = core.TrialInfo(
        trial_id=3,
        experiment_id=2,
        hparams=values,
        trial_seed=cfg.reproducibility.experiment_seed,
        config=cfg,
        code_dir=code_dir,
        latest_checkpoint=latest_checkpoint,
        extra={"tensorboard_dir": str(tmp_path / "tensorboard")},
    )
    recorder = recorder or core.MemoryBackend()
    recorder.lengths = list(lengths) if lengths is not None else [cfg.searcher.max_length.value]
    recorder.completed = []
    recorder.preempt = preempt
    storage = SharedFSStorage(tmp_path / "checkpoints")
    context = core.build_context(info, backend=recorder, storage=storage, distributed=distributed)
    return Run(context, recorder, recorder, storage)


def train(trial_class: Any, run: Run) -> Any:
    return TFKerasTrialController(trial_class, run.context).run()
