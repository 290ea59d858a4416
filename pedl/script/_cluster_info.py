"""``get_cluster_info()``: what a script learns about the trial it runs as (Determined 0.38's
``det.get_cluster_info()``)."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from pedl import core


@dataclass(frozen=True)
class TrialClusterInfo:
    """The trial a script runs as."""

    trial_id: int
    experiment_id: int
    hparams: dict[str, Any]
    trial_seed: int
    config: dict[str, Any]
    """The experiment config, with defaults filled in."""

    @property
    def _config(self) -> dict[str, Any]:
        """Determined's name of :attr:`config`."""
        return self.config


@dataclass(frozen=True)
class ClusterInfo:
    """Where a script runs: ``task_type`` is always ``"TRIAL"`` under PEDL."""

    trial: TrialClusterInfo
    latest_checkpoint: str | None
    """The trial's latest checkpoint (its storage id), to resume from; None on a first run."""
    task_type: str = "TRIAL"


def get_cluster_info() -> ClusterInfo | None:
    """The trial this script runs as, or None when it runs outside PEDL."""
    context = core.active_context()
    if context is None:
        return None
    info = context.info
    return ClusterInfo(
        trial=TrialClusterInfo(
            trial_id=info.trial_id,
            experiment_id=info.experiment_id,
            hparams=dict(info.hparams),
            trial_seed=info.trial_seed,
            config=info.config.as_dict(),
        ),
        latest_checkpoint=info.latest_checkpoint,
    )
