"""The raw-bytes scan of :mod:`pedl.master.api._limits` agrees with a JSON parser: it refuses
exactly the documents nested deeper than the limit, and those with a lone surrogate."""

from __future__ import annotations

import json
from typing import Any

from hypothesis import given, settings
from hypothesis import strategies as st

from pedl.master.api._limits import json_body_problem

# Strings full of what the scan must see through: quotes, backslashes, brackets, escapes.
_TEXT = st.text(alphabet=st.sampled_from(list('ab"\\[]{}\u00e9\U0001f600\n')), max_size=8)
_JSON = st.recursive(
    st.none() | st.booleans() | st.integers() | _TEXT,
    lambda inner: st.lists(inner, max_size=3) | st.dictionaries(_TEXT, inner, max_size=3),
    max_leaves=40,
)


def _depth(value: Any) -> int:
    if isinstance(value, list):
        return 1 + max((_depth(item) for item in value), default=0)
    if isinstance(value, dict):
        return 1 + max((_depth(item) for item in value.values()), default=0)
    return 0


@settings(max_examples=100, derandomize=True)
@given(value=_JSON, max_depth=st.integers(min_value=2, max_value=6), ascii_only=st.booleans())
def test_depth_is_the_parsers(value: Any, max_depth: int, ascii_only: bool) -> None:
    body = json.dumps(value, ensure_ascii=ascii_only).encode()
    problem = json_body_problem(body, max_depth)
    assert (problem is not None) == (_depth(value) > max_depth), (body, problem)


def test_lone_surrogates_escaped_or_raw_are_found_and_pairs_are_not() -> None:
    assert json_body_problem(b'{"a": "\\udcff"}', 64) is not None
    assert json_body_problem(b'{"a": "\\uD800x"}', 64) is not None
    assert json_body_problem(b'{"a": "x\xed\xb3\xbf"}', 64) is not None
    assert json_body_problem(b'{"a": "\\ud83d\\ude00"}', 64) is None  # one character
    assert json_body_problem(b'{"a": "\\\\udcff"}', 64) is None  # a backslash, then text
    assert json_body_problem('{"a": "\U0001f600"}'.encode(), 64) is None


def test_a_deep_body_is_refused_in_linear_time() -> None:
    assert json_body_problem(b"[" * 10_000_000, 64) is not None
    assert json_body_problem(b"[]" * 5_000_000, 64) is None
