"""What every framework controller does with a validation's metrics: the searcher metric
taken from them, the trial's best kept, and whether ``checkpoint_policy`` asks for a
checkpoint now. Framework-free, so that each controller (Keras, TensorFlowTrial,
EstimatorTrial on TensorFlow 2.15) shares it."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Protocol

from pedl.config import ExperimentConfig


class SearcherMetricProgress(Protocol):
    """The part of a controller's progress counters this module keeps."""

    best_metric: float | None
    last_searcher_metric: float | None


def record_searcher_metric(
    progress: SearcherMetricProgress,
    config: ExperimentConfig,
    metrics: Mapping[str, float],
    *,
    choices: str,
    error: type[Exception],
) -> bool:
    """Record the searcher metric of ``metrics`` in ``progress`` (its latest value, and the
    best so far by ``searcher.smaller_is_better``); return True when ``checkpoint_policy``
    asks for a checkpoint after this validation (``all``, or ``best`` and it improved).

    A searcher metric missing from ``metrics`` raises ``error`` naming the metrics there are
    and the config field to set to one of ``choices``."""
    searcher = config.searcher
    if searcher.metric not in metrics:
        raise error(
            f"the searcher metric {searcher.metric!r} is not among the validation metrics "
            f"({', '.join(sorted(metrics))}); set searcher.metric in the experiment config "
            f"to one of {choices}"
        )
    value = metrics[searcher.metric]
    progress.last_searcher_metric = value
    best = progress.best_metric
    improved = best is None or (value < best if searcher.smaller_is_better else value > best)
    if improved:
        progress.best_metric = value
    policy = config.checkpoint_policy
    return policy == "all" or (policy == "best" and improved)
