"""The core context: one object per concern, handed to framework controllers."""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from pedl.config import ExperimentConfig
from pedl.core._checkpoint import CheckpointContext, CheckpointRegistry
from pedl.core._distributed import DistributedContext
from pedl.core._preempt import PreemptContext
from pedl.core._searcher import SearcherContext, SearcherSession
from pedl.core._train import MetricsWriter, TrainContext
from pedl.storage import StorageManager


@dataclass(frozen=True)
class TrialInfo:
    """What a trial is: immutable for the life of the trial process."""

    trial_id: int
    experiment_id: int
    hparams: dict[str, Any]
    trial_seed: int
    config: ExperimentConfig
    code_dir: Path
    latest_checkpoint: str | None = None
    warm_start_checkpoint: str | None = None
    """A checkpoint (of another trial) whose weights the trial starts from, with its counters
    at 0, when it has no checkpoint of its own (``searcher.source_checkpoint_uuid``)."""
    extra: dict[str, Any] = field(default_factory=dict)


@dataclass(frozen=True)
class Context:
    """Everything a controller needs from the platform, one part per concern.

    The cluster builds it with REST-backed parts; local mode and tests build it with
    in-process stand-ins. Controllers must not reach around it.
    """

    info: TrialInfo
    distributed: DistributedContext
    train: TrainContext
    checkpoint: CheckpointContext
    searcher: SearcherContext
    preempt: PreemptContext


def build_context(
    info: TrialInfo,
    *,
    metrics: MetricsWriter,
    checkpoints: CheckpointRegistry,
    storage: StorageManager,
    searcher: SearcherSession,
    should_preempt: Callable[[], bool] = lambda: False,
    distributed: DistributedContext | None = None,
) -> Context:
    """The one factory of core contexts: the backends in, the parts out.

    Local mode passes in-process stand-ins, the trial process REST clients, tests small
    recorders; every part is then the same class, so controllers cannot tell them apart.

    With a ``distributed`` context of several workers the parts know the rank: only the
    chief reports metrics, stores checkpoints and completes searcher operations; the
    chief's searcher lengths and preemption answers are broadcast to the others.
    """
    distributed = distributed or DistributedContext.single()
    return Context(
        info=info,
        distributed=distributed,
        train=TrainContext(metrics, is_chief=distributed.is_chief),
        checkpoint=CheckpointContext(storage, checkpoints, distributed),
        searcher=SearcherContext(searcher, info.config.searcher_unit, distributed),
        preempt=PreemptContext(should_preempt, distributed),
    )
