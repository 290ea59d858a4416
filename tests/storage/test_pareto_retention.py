"""Checkpoint retention in a multi-objective search: the best checkpoints are the Pareto
front of their validations' objective vectors (property tests of
:func:`pedl.storage.checkpoints_to_delete` with ``directions``)."""

from __future__ import annotations

from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from pedl.searcher import dominates
from pedl.storage import CheckpointSummary, checkpoint_objectives, checkpoints_to_delete

PROPERTY = settings(max_examples=150, suppress_health_check=[HealthCheck.too_slow])

value = st.one_of(st.none(), st.integers(min_value=0, max_value=9).map(float))
checkpoint_lists = st.lists(
    st.tuples(st.integers(min_value=1, max_value=3), value, value), max_size=12
).map(
    lambda rows: [
        CheckpointSummary(f"c{i}", trial, i, a, (a, b)) for i, (trial, a, b) in enumerate(rows)
    ]
)


def _point(c: CheckpointSummary) -> tuple[float, float] | None:
    """accuracy (larger better), params (smaller better) as minimised values."""
    assert c.objectives is not None
    a, b = c.objectives
    return None if a is None or b is None else (-a, b)


@PROPERTY
@given(checkpoint_lists, st.integers(min_value=1, max_value=4))
def test_the_front_of_the_trials_latest_scored_checkpoints_is_kept(
    checkpoints: list[CheckpointSummary], best: int
) -> None:
    doomed = checkpoints_to_delete(
        checkpoints,
        smaller_is_better=False,
        save_trial_latest=0,
        save_trial_best=0,
        save_experiment_best=best,
        directions=[False, True],
    )
    latest: dict[int, CheckpointSummary] = {}  # each trial's latest scored checkpoint
    for c in checkpoints:
        known = latest.get(c.trial_id)
        if _point(c) is not None and (known is None or c.total_batches > known.total_batches):
            latest[c.trial_id] = c
    scored = [(c, p) for c in latest.values() if (p := _point(c)) is not None]
    front = {c.storage_id for c, p in scored if not any(dominates(q, p) for _, q in scored)}
    kept = {c.storage_id for c in checkpoints} - doomed
    assert front <= kept
    assert len(kept) == max(len(front), min(best, len(scored)))
    assert kept <= {c.storage_id for c in latest.values()}


@PROPERTY
@given(checkpoint_lists, st.integers(min_value=0, max_value=2))
def test_each_trial_keeps_its_best_in_pareto_order_and_its_latest(
    checkpoints: list[CheckpointSummary], best: int
) -> None:
    doomed = checkpoints_to_delete(
        checkpoints,
        smaller_is_better=False,
        save_trial_latest=1,
        save_trial_best=best,
        save_experiment_best=0,
        directions=[False, True],
    )
    for trial in {c.trial_id for c in checkpoints}:
        mine = [c for c in checkpoints if c.trial_id == trial]
        latest = max(mine, key=lambda c: c.total_batches)
        assert latest.storage_id not in doomed
        scored = [(c, p) for c in mine if (p := _point(c)) is not None]
        kept_best = [(c, p) for c, p in scored if c.storage_id not in doomed and c is not latest]
        assert len(kept_best) <= best
        assert len([c for c, _ in scored if c.storage_id not in doomed]) >= min(best, len(scored))
        # what dominates a checkpoint kept as best is kept too
        for _, p in kept_best:
            assert all(d.storage_id not in doomed for d, q in scored if dominates(q, p))


def test_the_objectives_come_from_the_checkpoints_validation_metrics() -> None:
    metadata = {"validation_metrics": {"accuracy": 0.9, "params": 1200, "note": "x"}}
    assert checkpoint_objectives(metadata, ["accuracy", "params"]) == (0.9, 1200.0)
    assert checkpoint_objectives(metadata, ["accuracy", "loss"]) == (0.9, None)
    assert checkpoint_objectives(metadata, ["accuracy"]) is None
    assert checkpoint_objectives({}, ["a", "b"]) == (None, None)
