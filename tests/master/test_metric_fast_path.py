"""The metric-report fast path's schema (``fast_metric_rows``) against the route's
(``MetricsBatch`` then the database layer's value check): it takes a subset of the bodies the
route takes, with the same rows (a non-finite value as the string that stores it), and leaves
every body the route refuses to the route, whose errors name the field."""

from __future__ import annotations

import json
import math
from typing import Any

from hypothesis import given, settings
from pydantic import ValidationError

from pedl.db.metrics import (
    AnyMetricRow,
    MetricValueError,
    as_metric_row,
    check_metric_values,
)
from pedl.master.api._schemas import MetricsBatch
from pedl.master.api.trials import fast_metric_rows, metric_rows
from pedl.vocabulary import encode_metric_value

from .metric_bodies import report_bodies


def _route_rows(body: bytes) -> list[AnyMetricRow] | None:
    """The route's rows, or ``None`` where it refuses the body (422, naming the field)."""
    try:
        rows = metric_rows(MetricsBatch.model_validate_json(body))
        check_metric_values(rows)
    except (ValidationError, MetricValueError):
        return None
    return rows


def _stored(any_rows: list[AnyMetricRow]) -> list[Any]:
    """What the database layer stores of ``rows`` (non-finite values as their strings)."""
    rows = [as_metric_row(row) for row in any_rows]
    return [
        (
            row.kind,
            row.total_batches,
            {name: encode_metric_value(value) for name, value in row.metrics.items()},
            row.total_records,
            row.total_epochs,
            row.reported_at,
        )
        for row in rows
    ]


@settings(max_examples=600, derandomize=True)
@given(body=report_bodies())
def test_the_fast_schema_takes_what_the_route_takes_or_leaves_it_to_the_route(
    body: bytes,
) -> None:
    fast = fast_metric_rows(body)
    route = _route_rows(body)
    if fast is None:
        return  # the route decides, as before
    assert route is not None, body
    assert _stored(fast) == _stored(route), body
    values = [value for row in fast for value in row["metrics"].values()]
    assert all(type(value) is not float or math.isfinite(value) for value in values), body


def test_the_common_reports_take_the_fast_schema() -> None:
    rows = [
        {"kind": "training", "total_batches": 10, "metrics": {"loss": 0.25, "acc": 1}},
        {
            "kind": "validation",
            "total_batches": 10,
            "total_epochs": 0.5,
            "total_records": 320,
            "metrics": {"val_loss": "NaN", "big": "Infinity", "small": "-Infinity", "n": None},
        },
        {"kind": "training", "total_batches": 11, "metrics": {"loss": 1e300, "flag": True}},
    ]
    body = json.dumps({"rows": rows}).encode()
    fast = fast_metric_rows(body)
    assert fast is not None
    assert _stored(fast) == _stored(metric_rows(MetricsBatch.model_validate_json(body)))
    assert fast[1]["metrics"]["val_loss"] == "NaN"
    assert fast[2]["metrics"] == {"loss": 1e300, "flag": 1.0}


def test_what_the_route_must_refuse_or_check_is_left_to_it() -> None:
    def body(metrics: str, optional: str = "") -> bytes:
        row = f'{{"kind":"training","total_batches":1,"metrics":{metrics}{optional}}}'
        return f'{{"rows":[{row}]}}'.encode()

    for left in (
        body('{"lo\\u0000ss":1}'),  # NUL in a name: the route's 422 names it
        body('{"loss":1e301}'),  # beyond the bound: the database layer's 422 names it
        body('{"loss":"nan"}'),  # non-finite, spelled otherwise: the route decides
        body('{"":1}'),
        body('{"loss":1}', ',"extra":1'),
        body('{"loss":1}', ',"total_epochs":-1'),
        b'{"rows":[],"more":1}',
        b'{"rows":[}',
        b"not json",
    ):
        assert fast_metric_rows(left) is None, left
