"""A trial's best validation value, its best checkpoint and its checkpoints' searcher metric
(``trials.refresh_trial_best``), against a plain reading of the rows, on SQLite and
PostgreSQL: numbers exactly as reported (every bit of a double), booleans, the stored
``"NaN"``/``"Infinity"`` strings and missing keys ignored, any metric name. The refresh after a
report or a checkpoint looks only at what changed; the steps here rewrite rows (a trial
resumed from an earlier checkpoint), register checkpoints before and after their rows and
delete some, in any order."""

from __future__ import annotations

import math
import uuid
from typing import Any

from hypothesis import HealthCheck, example, given, settings
from hypothesis import strategies as st

from pedl.db import Checkpoint, Database, MetricRow, checkpoints, metrics, trials
from pedl.vocabulary import MetricKind
from tests.master.test_repositories import _experiment, _trial

NAMES = st.sampled_from(["loss", "val.acc", 'say "hi"', "back\\slash", "über loss", "a[0]"])
VALUES = st.one_of(
    st.sampled_from([0.5, 1, 1.0, 2.0]),  # ties: the later checkpoint wins
    st.floats(allow_nan=False, allow_infinity=False, min_value=-1e300, max_value=1e300),
    st.integers(min_value=-(2**53), max_value=2**53),
    st.booleans(),
    st.sampled_from([math.nan, math.inf, -math.inf, "text"]),
    st.none(),  # the metric missing from the row
)
BATCHES = st.integers(1, 12)
STEPS = st.lists(
    st.one_of(
        st.tuples(st.just("report"), st.dictionaries(BATCHES, VALUES, min_size=1, max_size=4)),
        st.tuples(st.just("checkpoint"), BATCHES),
        st.tuples(st.just("delete"), BATCHES),
    ),
    min_size=1,
    max_size=8,
)


def _number(value: Any) -> float | None:
    if isinstance(value, bool) or not isinstance(value, int | float) or not math.isfinite(value):
        return None
    return float(value)


@settings(max_examples=40, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(name=NAMES, smaller=st.booleans(), steps=STEPS)
@example(  # a tie: the later checkpoint is the best
    name="loss",
    smaller=True,
    steps=[("checkpoint", 1), ("checkpoint", 2), ("report", {1: 1, 2: 1.0})],
)
def test_the_best_is_what_the_rows_say(
    database: Database, name: str, smaller: bool, steps: list[tuple[str, Any]]
) -> None:
    trial_id = _trial(database, _experiment(database, metric=name, smaller=smaller))
    rows: dict[int, Any] = {}
    taken: dict[int, str] = {}  # batch count -> checkpoint uuid
    deleted: set[str] = set()
    for step, what in steps:
        with database.session(write=True) as session:
            if step == "report":
                metrics.upsert_metrics(
                    session,
                    trial_id,
                    [
                        MetricRow(
                            kind=MetricKind.VALIDATION,
                            total_batches=batches,
                            metrics={"other": 1.0} if value is None else {name: value},
                        )
                        for batches, value in what.items()
                    ],
                )
                rows.update(what)
            elif step == "checkpoint" and what not in taken:
                taken[what] = uuid.uuid4().hex
                checkpoints.register_checkpoint(
                    session,
                    trial_id,
                    uuid=taken[what],
                    total_batches=what,
                    metadata={},
                    resources={},
                )
            elif step == "delete" and what in taken:
                checkpoints.mark_checkpoints_deleted(session, [taken[what]])
                deleted.add(taken[what])
    numbers = {b: n for b, v in rows.items() if (n := _number(v)) is not None}
    sign = 1.0 if smaller else -1.0
    candidates = [
        (sign * numbers[b], -b, u) for b, u in taken.items() if b in numbers and u not in deleted
    ]
    with database.session() as session:
        trial = trials.get_trial(session, trial_id)
        expected_best = min(numbers.values(), key=lambda v: sign * v) if numbers else None
        assert trial.best_validation == expected_best
        assert trial.best_checkpoint_uuid == (min(candidates)[2] if candidates else None)
        stored = {
            c.total_batches: c.searcher_metric
            for c in session.query(Checkpoint).filter(Checkpoint.trial_id == trial_id)
        }
        assert stored == {b: numbers.get(b) for b in taken}
