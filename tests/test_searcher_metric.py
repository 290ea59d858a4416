"""``record_searcher_metric``: the searcher metric, the best so far and the checkpoint policy,
as every framework controller applies them after a validation."""

from __future__ import annotations

from dataclasses import dataclass

import pytest
from hypothesis import given
from hypothesis import strategies as st

from pedl._searcher_metric import record_searcher_metric
from pedl.config import ExperimentConfig, parse_config


@dataclass
class Progress:
    best_metric: float | None = None
    last_searcher_metric: float | None = None


def config(policy: str, smaller_is_better: bool) -> ExperimentConfig:
    return parse_config(
        {
            "hyperparameters": {"global_batch_size": 8},
            "searcher": {
                "name": "single",
                "metric": "val_loss",
                "smaller_is_better": smaller_is_better,
                "max_length": {"batches": 10},
            },
            "checkpoint_policy": policy,
        }
    )


@given(
    values=st.lists(st.floats(-1e6, 1e6), min_size=1, max_size=20),
    policy=st.sampled_from(["best", "all", "none"]),
    smaller_is_better=st.booleans(),
)
def test_best_and_checkpoints_follow_the_policy(
    values: list[float], policy: str, smaller_is_better: bool
) -> None:
    experiment = config(policy, smaller_is_better)
    progress = Progress()
    pick = min if smaller_is_better else max
    for i, value in enumerate(values):
        wanted = record_searcher_metric(
            progress, experiment, {"val_loss": value, "val_x": 0.0}, choices="them", error=KeyError
        )
        seen = values[: i + 1]
        improved = i == 0 or (pick(seen) == value and value != pick(values[:i]))
        assert progress.last_searcher_metric == value
        assert progress.best_metric == pick(seen)
        assert wanted == (policy == "all" or (policy == "best" and improved))


def test_a_missing_searcher_metric_names_the_metrics_there_are() -> None:
    class Refused(Exception):
        pass

    with pytest.raises(Refused) as raised:
        record_searcher_metric(
            Progress(), config("best", True), {"val_acc": 1.0}, choices="them", error=Refused
        )
    assert str(raised.value) == (
        "the searcher metric 'val_loss' is not among the validation metrics (val_acc); "
        "set searcher.metric in the experiment config to one of them"
    )
