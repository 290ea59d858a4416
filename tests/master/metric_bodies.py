"""Hypothesis strategy of ``POST /trials/{id}/metrics`` bodies as JSON text: every field one
the route takes, but (most often) one that it refuses or that takes it to its edge. Shared by
the fast path's schema tests and the report-text tests. And plain training reports
(:func:`training_body`)."""

from __future__ import annotations

import json

from hypothesis import strategies as st

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
def report_bodies(draw: st.DrawFn) -> bytes:
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


def training_body(batches: range | list[int], loss: float) -> bytes:
    """A report's body as PEDL's clients write it: a training row at each batch count, its
    ``loss`` the same in every row."""
    rows = [{"kind": "training", "total_batches": b, "metrics": {"loss": loss}} for b in batches]
    return json.dumps({"rows": rows}).encode()
