"""Which checkpoints to keep (save_trial_latest, save_trial_best, save_experiment_best), and
the collection of what killed uploads left behind."""

from __future__ import annotations

import logging
from collections import defaultdict
from collections.abc import Iterable
from dataclasses import dataclass

from pedl.storage._base import StorageManager

logger = logging.getLogger(__name__)

TORN_UPLOAD_GRACE_SECONDS = 6 * 3600.0
"""How long an upload may go without writing anything before garbage collection takes it for
torn (its process killed): far longer than one file of a checkpoint takes to upload, so an
upload still going on is never collected."""


@dataclass(frozen=True)
class CheckpointSummary:
    storage_id: str
    trial_id: int
    total_batches: int
    metric: float | None  # the searcher metric of the validation it follows, if any


def checkpoints_to_delete(
    checkpoints: Iterable[CheckpointSummary],
    *,
    smaller_is_better: bool,
    save_trial_latest: int,
    save_trial_best: int,
    save_experiment_best: int,
    keep: Iterable[str] = (),
) -> set[str]:
    """The ids of checkpoints no retention rule keeps (``keep`` are always kept)."""
    all_checkpoints = list(checkpoints)
    kept = set(keep)

    def rank(c: CheckpointSummary) -> float:
        assert c.metric is not None
        return c.metric if smaller_is_better else -c.metric

    by_trial: dict[int, list[CheckpointSummary]] = defaultdict(list)
    for c in all_checkpoints:
        by_trial[c.trial_id].append(c)
    for trial_checkpoints in by_trial.values():
        latest = sorted(trial_checkpoints, key=lambda c: c.total_batches, reverse=True)
        kept.update(c.storage_id for c in latest[:save_trial_latest])
        scored = sorted((c for c in trial_checkpoints if c.metric is not None), key=rank)
        kept.update(c.storage_id for c in scored[:save_trial_best])
    scored = sorted((c for c in all_checkpoints if c.metric is not None), key=rank)
    kept.update(c.storage_id for c in scored[:save_experiment_best])
    return {c.storage_id for c in all_checkpoints} - kept


def collect_torn_uploads(
    storage: StorageManager, older_than: float = TORN_UPLOAD_GRACE_SECONDS
) -> list[str]:
    """Remove the files of uploads that never finished (never registered as checkpoints, so
    no retention rule sees them) and were last written ``older_than`` seconds ago; run by
    every checkpoint garbage collection. Returns their ids; a storage error is logged, not
    raised (the next collection tries again)."""
    try:
        torn = storage.delete_torn_uploads(older_than)
    except Exception as err:
        logger.warning("torn checkpoint uploads not collected: %s", err)
        return []
    if torn:
        logger.info("removed %d torn checkpoint upload(s): %s", len(torn), ", ".join(torn))
    return torn
