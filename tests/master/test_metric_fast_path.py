"""The metric-report fast path's schema (``fast_metric_rows``) against the route's
(``MetricsBatch`` then the database layer's value check): it takes a subset of the bodies the
route takes, with the same rows (a non-finite value as the string that stores it), and leaves
every body the route refuses to the route, whose errors name the field."""

from __future__ import annotations

import json
import math
from typing import Any

from hypothesis import given, settings
from hypothesis import strategies as st
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

# JSON text of metric values, names, kinds, batch counts and optional fields: ones the route
# takes, then ones it refuses (or that take it to its edge).
_VALUES = (
    ["1", "0.5", "-0.0", "1e300", "-1e300", "true", "false", "null", '"NaN"', '"Infinity"',
     '"-Infinity"', '"1.5"', '" 2 "', '"1_000"', "123456789012345678901234567890",
     "9007199254740993", "2e-320"],
    ["1.0000001e300", "1e301", "1e400", "-1e400", '"nan"', '"inf"', '"abc"', '""', "NaN",
     "Infinity", "[]", "{}"],
)  # fmt: skip
_NAMES = (
    ['"loss"', '"' + "m" * 256 + '"', '"\\u00e9"', '"say \\"hi\\""', '"NaN"', '"\\\\u0000"'],
    ['"a\\u0000b"', '""', '"' + "m" * 257 + '"'],
)  # fmt: skip
_OPTIONAL = (
    ["", ',"total_records":5', ',"total_records":null', ',"total_epochs":1.5',
     ',"total_epochs":null', ',"reported_at":"2026-01-02T03:04:05Z"',
     ',"reported_at":"2026-01-02T03:04:05+02:00"', ',"reported_at":"2026-01-02T03:04:05"',
     ',"reported_at":null'],
    [',"total_records":-1', ',"total_records":9223372036854775808', ',"total_epochs":-1',
     ',"total_epochs":"NaN"', ',"reported_at":"9999-12-31T23:59:59-12:00"', ',"extra":1'],
)  # fmt: skip
_KINDS = (['"training"', '"validation"'], ['"other"', "1"])
_BATCHES = (["0", "7", "9223372036854775807"], ["-1", "9223372036854775808", "1.0"])


@st.composite
def _bodies(draw: st.DrawFn) -> bytes:
    """A body whose fields are all ones the route takes but (most often) one."""
    tricky = draw(st.integers(min_value=-4, max_value=12))
    drawn = 0

    def field(pools: tuple[list[str], list[str]]) -> str:
        nonlocal drawn
        drawn += 1
        return draw(st.sampled_from(pools[drawn - 1 == tricky]))

    rows = []
    for _ in range(draw(st.integers(min_value=0, max_value=3))):
        count = draw(st.integers(min_value=0, max_value=3))
        metrics = ",".join(f"{field(_NAMES)}:{field(_VALUES)}" for _ in range(count))
        rows.append(
            f'{{"kind":{field(_KINDS)},"total_batches":{field(_BATCHES)},'
            f'"metrics":{{{metrics}}}{field(_OPTIONAL)}}}'
        )
    extra = ',"more":[]' if tricky == -1 else ""
    return ('{"rows":[' + ",".join(rows) + "]" + extra + "}").encode()


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
@given(body=_bodies())
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
