"""A context that belongs to no experiment: for loading a checkpoint's model outside PEDL."""

from __future__ import annotations

import tempfile
from collections.abc import Mapping
from pathlib import Path
from typing import Any

from pedl.config import ExperimentConfig, parse_config
from pedl.core._context import Context, TrialInfo, build_context
from pedl.storage import SharedFSStorage
from pedl.vocabulary import MetricKind


class DetachedBackend:
    """The trial backend of no experiment: metrics and checkpoint records go nowhere, the
    searcher has no work, nothing asks the trial to stop."""

    def write_metrics(
        self,
        kind: MetricKind,
        total_batches: int,
        metrics: Mapping[str, float],
        total_epochs: float | None = None,
    ) -> None:
        pass

    def register_checkpoint(
        self,
        storage_id: str,
        total_batches: int,
        metadata: Mapping[str, Any],
        resources: Mapping[str, int],
    ) -> None:
        pass

    def next_length(self) -> int | None:
        return None

    def complete(self, length: int, searcher_metric: float) -> None:
        pass

    def should_preempt(self) -> bool:
        return False


def detached_context(
    config: ExperimentConfig | Mapping[str, Any],
    *,
    hparams: Mapping[str, Any],
    trial_id: int = 0,
    experiment_id: int = 0,
    trial_seed: int = 0,
    code_dir: Path = Path("."),
) -> Context:
    """A context whose reports are discarded and whose searcher has no operations."""
    if not isinstance(config, ExperimentConfig):
        config = parse_config(dict(config))
    info = TrialInfo(
        trial_id=trial_id,
        experiment_id=experiment_id,
        hparams=dict(hparams),
        trial_seed=trial_seed,
        config=config,
        code_dir=code_dir,
    )
    storage = SharedFSStorage(Path(tempfile.gettempdir()) / "pedl-detached-checkpoints")
    return build_context(info, backend=DetachedBackend(), storage=storage)
