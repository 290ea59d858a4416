"""A trial's best validation value, its best checkpoint and its checkpoints' searcher metric
(``trials.refresh_trial_best``), against a plain reading of the rows, on SQLite and
PostgreSQL: numbers exactly as reported (every bit of a double), booleans, the stored
``"NaN"``/``"Infinity"`` strings and missing keys ignored, any metric name."""

from __future__ import annotations

import math
import uuid
from typing import Any

from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from pedl.db import Checkpoint, Database, MetricRow, checkpoints, metrics, trials
from pedl.vocabulary import CheckpointState, MetricKind
from tests.master.test_repositories import _experiment, _trial

NAMES = st.sampled_from(["loss", "val.acc", 'say "hi"', "back\\slash", "über loss", "a[0]"])
VALUES = st.one_of(
    st.floats(allow_nan=False, allow_infinity=False, min_value=-1e300, max_value=1e300),
    st.integers(min_value=-(2**53), max_value=2**53),
    st.booleans(),
    st.sampled_from([math.nan, math.inf, -math.inf, "text"]),
    st.none(),  # the metric missing from the row
)


def _number(value: Any) -> float | None:
    if isinstance(value, bool) or not isinstance(value, int | float) or not math.isfinite(value):
        return None
    return float(value)


@settings(max_examples=40, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(
    name=NAMES,
    smaller=st.booleans(),
    rows=st.dictionaries(st.integers(1, 50), VALUES, min_size=1, max_size=8),
    checkpointed=st.sets(st.integers(1, 50), max_size=6),
    deleted=st.sets(st.integers(1, 50), max_size=3),
)
def test_the_best_is_what_the_rows_say(
    database: Database,
    name: str,
    smaller: bool,
    rows: dict[int, Any],
    checkpointed: set[int],
    deleted: set[int],
) -> None:
    trial_id = _trial(database, _experiment(database, metric=name, smaller=smaller))
    by_batches = {batches: uuid.uuid4().hex for batches in sorted(checkpointed)}
    with database.session(write=True) as session:
        metrics.upsert_metrics(
            session,
            trial_id,
            [
                MetricRow(
                    kind=MetricKind.VALIDATION,
                    total_batches=batches,
                    metrics={"other": 1.0} if value is None else {name: value, "other": 1.0},
                )
                for batches, value in rows.items()
            ],
        )
        for batches, checkpoint_uuid in by_batches.items():
            checkpoints.register_checkpoint(
                session,
                trial_id,
                uuid=checkpoint_uuid,
                total_batches=batches,
                metadata={},
                resources={},
                state=CheckpointState.DELETED if batches in deleted else CheckpointState.COMPLETED,
            )
    numbers = {b: n for b, v in rows.items() if (n := _number(v)) is not None}
    sign = 1.0 if smaller else -1.0
    completed = {b: u for b, u in by_batches.items() if b in numbers and b not in deleted}
    candidates = [(sign * numbers[b], -b, u) for b, u in completed.items()]
    with database.session() as session:
        trial = trials.get_trial(session, trial_id)
        expected_best = min(numbers.values(), key=lambda v: sign * v) if numbers else None
        assert trial.best_validation == expected_best
        assert trial.best_checkpoint_uuid == (min(candidates)[2] if candidates else None)
        stored = {
            c.total_batches: c.searcher_metric
            for c in session.query(Checkpoint).filter(Checkpoint.trial_id == trial_id)
        }
        assert stored == {b: numbers.get(b) for b in by_batches}
