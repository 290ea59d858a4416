"""The raw-bytes depth scan of :func:`pedl.master.api._limits.json_body_problem` finds the
same brackets as the plain scan it replaced (strings dropped by a regular expression over the
whole body), for any bytes: JSON or not, quotes unbalanced, escapes anywhere."""

from __future__ import annotations

import re

from hypothesis import example, given, settings
from hypothesis import strategies as st

from pedl.master.api._limits import _deeper_than, json_body_problem

_STRING = re.compile(rb'"[^"]*"')
_NOT_BRACKET = bytes(b for b in range(256) if b not in b"[]{}")


def _plain_brackets(body: bytes) -> bytes:
    """The brackets outside strings, as the first version of the scan found them."""
    text = body.replace(b"\\\\", b"").replace(b'\\"', b"")
    return _STRING.sub(b"", text).translate(None, _NOT_BRACKET)


def _plain_too_deep(body: bytes, max_depth: int) -> bool:
    brackets = _plain_brackets(body)
    return len(brackets) > max_depth and _deeper_than(brackets, max_depth)


@settings(max_examples=2000, derandomize=True)
@example(body=b'"[[""', max_depth=1)  # an odd number of quotes: not paired as even ones are
@example(body=b'"[[""[', max_depth=1)
@example(body=b'"[" "[[" [[', max_depth=1)
@example(body=b'["\\"[[[\\"]"]', max_depth=1)
@given(
    body=st.lists(st.sampled_from([b"[", b"]", b"{", b"}", b'"', b"\\", b"a", b":", b","])).map(
        b"".join
    ),
    max_depth=st.integers(min_value=1, max_value=4),
)
def test_the_depth_scan_finds_the_plain_scans_brackets(body: bytes, max_depth: int) -> None:
    problem = json_body_problem(body, max_depth)
    assert (problem is not None) == _plain_too_deep(body, max_depth), body
