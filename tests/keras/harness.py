"""In-memory stand-ins for the platform side of a trial, for controller tests."""

from __future__ import annotations

from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
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
class Recorder:
    """Metrics (keyed like the real stores) and checkpoint registrations."""

    metrics: dict[tuple[str, int], dict[str, float]] = field(default_factory=dict)
    writes: list[tuple[str, int]] = field(default_factory=list)
    checkpoints: list[tuple[str, int]] = field(default_factory=list)

    def write_metrics(
        self, kind: core.MetricKind, total_batches: int, metrics: Mapping[str, float]
    ) -> None:
        self.metrics[(kind, total_batches)] = dict(metrics)
        self.writes.append((kind, total_batches))

    def register_checkpoint(
        self,
        storage_id: str,
        total_batches: int,
        metadata: Mapping[str, Any],
        resources: Mapping[str, int],
    ) -> None:
        self.checkpoints.append((storage_id, total_batches))

    def batches(self, kind: str) -> list[int]:
        return sorted(b for k, b in self.metrics if k == kind)


@dataclass
class Session:
    """A searcher that hands out the given lengths, one after another."""

    lengths: list[int]
    completed: list[tuple[int, float]] = field(default_factory=list)
    exits: list[str] = field(default_factory=list)

    def next_length(self) -> int | None:
        return self.lengths[0] if self.lengths else None

    def complete(self, length: int, searcher_metric: float) -> None:
        assert self.lengths and self.lengths[0] == length
        self.lengths.pop(0)
        self.completed.append((length, searcher_metric))

    def exit_early(self, reason: str) -> None:
        self.lengths.clear()
        self.exits.append(reason)


@dataclass
class Run:
    context: core.Context
    recorder: Recorder
    session: Session
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
    recorder: Recorder | None = None,
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
    recorder = recorder or Recorder()
    session = Session(list(lengths) if lengths is not None else [cfg.searcher.max_length.value])
    storage = SharedFSStorage(tmp_path / "checkpoints")
    context = core.build_context(
        info,
        metrics=recorder,
        checkpoints=recorder,
        storage=storage,
        searcher=session,
        should_preempt=preempt,
    )
    return Run(context, recorder, session, storage)


def train(trial_class: Any, run: Run) -> Any:
    return TFKerasTrialController(trial_class, run.context).run()
