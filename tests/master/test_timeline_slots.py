"""Placing attempts on slots (pedl.master.api._timeline): overlapping attempts never share a
slot, and no more slots are used than ever ran at once."""

from __future__ import annotations

import pytest
from hypothesis import given
from hypothesis import strategies as st

from pedl.master.api._timeline import Span, assign_slots

spans = st.lists(
    st.tuples(st.integers(0, 50), st.one_of(st.none(), st.integers(1, 20))).map(
        lambda t: Span(float(t[0]), None if t[1] is None else float(t[0] + t[1]))
    ),
    max_size=40,
)


def _end(span: Span) -> float:
    return float("inf") if span.end is None else span.end


def _overlap(a: Span, b: Span) -> bool:
    return a.start < _end(b) and b.start < _end(a)


@given(spans, st.integers(1, 4))
def test_overlapping_spans_never_share_a_slot(found: list[Span], width: int) -> None:
    slots = assign_slots(found, width)
    assert all(slot % width == 0 and slot >= 0 for slot in slots)
    for i, a in enumerate(found):
        for j in range(i + 1, len(found)):
            if _overlap(a, found[j]):
                assert slots[i] != slots[j]
    # As many blocks as the most spans running at once (at some span's start).
    most = max((sum(o.start <= s.start < _end(o) for o in found) for s in found), default=0)
    assert len(set(slots)) == most


def test_width_must_be_positive() -> None:
    with pytest.raises(ValueError, match="width"):
        assign_slots([Span(0.0, 1.0)], 0)
