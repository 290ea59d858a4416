"""The digits example's multi-objective search (pareto.yaml): accuracy against parameter
count with adaptive ASHA promoting by Pareto rank, run locally on a small budget; the
searcher hears both objectives and the front keeps its checkpoints."""

from __future__ import annotations

from pathlib import Path

import pytest

from pedl.config import load_config
from pedl.db import searcher as searcher_repo
from pedl.db import trials as trials_repo
from pedl.local import LocalExperiment
from pedl.searcher import front_ranks

EXAMPLE = Path(__file__).parents[2] / "examples" / "digits_keras"

SMALL = (
    "searcher.max_trials=6",
    "searcher.max_length={batches: 32}",
    "searcher.max_rungs=2",
    "searcher.max_concurrent_trials=1",
    "records_per_epoch=320",
)


def test_the_config_lists_two_objectives() -> None:
    config = load_config(EXAMPLE / "pareto.yaml")
    assert [(o.name, o.smaller_is_better) for o in config.searcher.objectives] == [
        ("val_accuracy", False),
        ("val_params", True),
    ]


@pytest.mark.slow
def test_a_small_pareto_search_runs_and_hears_both_objectives(tmp_path: Path) -> None:
    exp = LocalExperiment.create(EXAMPLE / "pareto.yaml", EXAMPLE, tmp_path, overrides=SMALL)
    summary = exp.run()
    assert summary.state == "COMPLETED"
    with exp.database.session() as session:
        trials = trials_repo.all_trials(session, exp.experiment_id)
        latest = trials_repo.latest_validations(session, [t.id for t in trials])
        rows = searcher_repo.list_searcher_events(session, exp.experiment_id)
        events = [dict(row.event) for row in rows]
    exp.close()
    assert len(trials) == 6
    vectors = [
        [latest[t.id]["val_accuracy"], latest[t.id]["val_params"]] for t in trials if t.id in latest
    ]
    assert len(vectors) == 6
    # the parameter count is the model's: larger layers, more parameters
    by_size = sorted(zip(trials, vectors, strict=True), key=lambda tv: tv[1][1])
    assert by_size[0][1][1] < by_size[-1][1][1]
    ranks = front_ranks(vectors, [False, True])
    assert 0 in ranks
    validated = [e for e in events if e["kind"] == "validation_completed"]
    assert validated and all(len(e["objectives"]) == 2 for e in validated)
    assert all(e["objectives"][0] == e["metric"] for e in validated)
