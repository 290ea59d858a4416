"""Which of an experiment's checkpoints its retention policy deletes: one rule for the driver
(as trials end, and when the experiment ends) and for the master's API (a changed policy on an
ended experiment, and every preview of a policy)."""

from __future__ import annotations

from collections.abc import Iterable
from typing import Protocol

from pedl.config import ExperimentConfig
from pedl.storage import CheckpointSummary, checkpoints_to_delete
from pedl.vocabulary import TrialState


class RetainedTrial(Protocol):
    """What retention reads of a trial (the driver's own record or a store's
    :class:`~pedl.engine.TrialRecord`)."""

    @property
    def state(self) -> TrialState: ...

    @property
    def latest_checkpoint(self) -> str | None: ...

    @property
    def warm_start(self) -> str | None: ...


def checkpoints_past_retention(
    config: ExperimentConfig,
    checkpoints: Iterable[CheckpointSummary],
    trials: Iterable[RetainedTrial],
) -> set[str]:
    """The ids of ``checkpoints`` that ``config``'s ``checkpoint_storage`` policy does not
    keep. A trial that may still run keeps what it would resume from: its latest checkpoint,
    or the one it starts from until it has one. A multi-objective search's best are ranked by
    Pareto order."""
    storage = config.checkpoint_storage
    keep = [t.latest_checkpoint or t.warm_start for t in trials if t.state.is_live]
    return checkpoints_to_delete(
        checkpoints,
        smaller_is_better=config.searcher.smaller_is_better,
        save_trial_latest=storage.save_trial_latest,
        save_trial_best=storage.save_trial_best,
        save_experiment_best=storage.save_experiment_best,
        keep=[k for k in keep if k],
        directions=[o.smaller_is_better for o in config.searcher.objectives],
    )
