"""The one rule for metric values that are not finite numbers (pedl.vocabulary): encoded as
JSON can carry them, and decoded back to the same float, whatever the value."""

from __future__ import annotations

import json
import math
from typing import Any

from hypothesis import given
from hypothesis import strategies as st

from pedl.vocabulary import (
    NON_FINITE_NAMES,
    decode_metric_value,
    encode_metric_value,
    encode_metric_values,
)

values = st.one_of(
    st.floats(allow_nan=True, allow_infinity=True),
    st.integers(),
    st.text(max_size=8),
    st.booleans(),
    st.none(),
)


def same(a: Any, b: Any) -> bool:
    if isinstance(a, float) and isinstance(b, float) and math.isnan(a):
        return math.isnan(b)
    return type(a) is type(b) and a == b


@given(values)
def test_a_value_survives_strict_json_and_comes_back(value: Any) -> None:
    encoded = encode_metric_value(value)
    text = json.dumps(encoded, allow_nan=False)  # strict JSON: no NaN literal
    decoded = decode_metric_value(json.loads(text))
    if isinstance(value, str) and value in NON_FINITE_NAMES:
        assert math.isnan(decoded) or math.isinf(decoded)
    else:
        assert same(decoded, value), (value, encoded, decoded)


@given(st.recursive(values, lambda inner: st.lists(inner) | st.dictionaries(st.text(), inner)))
def test_nested_documents_encode_to_strict_json(document: Any) -> None:
    json.dumps(encode_metric_values(document), allow_nan=False)


def test_the_names() -> None:
    assert [encode_metric_value(v) for v in (math.nan, math.inf, -math.inf)] == list(
        NON_FINITE_NAMES
    )
