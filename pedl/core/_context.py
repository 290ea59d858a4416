"""The core context: one object per concern, handed to framework controllers."""

from __future__ import annotations

from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from pedl.config import ExperimentConfig
from pedl.core._backend import TrialBackend
from pedl.core._checkpoint import CheckpointContext
from pedl.core._distributed import DistributedContext
from pedl.core._preempt import PreemptContext
from pedl.core._searcher import SearcherContext
from pedl.core._train import TrainContext
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

    Its parts stand on one :class:`~pedl.core.TrialBackend` (REST to the master on the
    cluster, in-process in local mode, in memory in tests). Controllers must not reach
    around it.
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
    backend: TrialBackend,
    storage: StorageManager,
    distributed: DistributedContext | None = None,
) -> Context:
    """The one factory of core contexts: a trial backend and a storage in, the parts out.

    The trial process passes its REST backend, local mode its in-process one, tests a
    :class:`~pedl.core.MemoryBackend`; every part is then the same class, so controllers
    cannot tell them apart.

    With a ``distributed`` context of several workers the parts know the rank: only the
    chief reports metrics, stores checkpoints and completes searcher operations; the
    chief's searcher lengths and preemption answers are broadcast to the others.
    """
    distributed = distributed or DistributedContext.single()
    return Context(
        info=info,
        distributed=distributed,
        train=TrainContext(backend, is_chief=distributed.is_chief),
        checkpoint=CheckpointContext(storage, backend, distributed),
        searcher=SearcherContext(backend, info.config.searcher_unit, distributed),
        preempt=PreemptContext(backend.should_preempt, distributed),
    )
