"""Largest-triangle-three-buckets: properties (hypothesis) and a known shape."""

from __future__ import annotations

import pytest
from hypothesis import given
from hypothesis import strategies as st

from pedl.master.api._downsample import lttb

finite = st.floats(min_value=-1e12, max_value=1e12, allow_nan=False)


@st.composite
def series(draw: st.DrawFn) -> list[tuple[float, float]]:
    xs = sorted(draw(st.lists(finite, max_size=300)))
    return [(x, draw(finite)) for x in xs]


@given(series(), st.integers(min_value=2, max_value=400))
def test_properties(points: list[tuple[float, float]], max_points: int) -> None:
    kept = lttb(points, max_points)
    assert len(kept) == min(len(points), max_points)
    if points:
        assert kept[0] is points[0] and kept[-1] is points[-1]
    # A subsequence: the same objects, in their order, none twice.
    positions = [next(i for i, p in enumerate(points) if p is q) for q in kept]
    assert positions == sorted(set(positions))


@given(series())
def test_short_series_are_returned_whole(points: list[tuple[float, float]]) -> None:
    assert lttb(points, max(2, len(points))) == points


def test_keeps_the_peaks() -> None:
    points = [(float(x), 0.0) for x in range(100)]
    points[37] = (37.0, 10.0)
    points[71] = (71.0, -10.0)
    kept = lttb(points, 10)
    assert (37.0, 10.0) in kept and (71.0, -10.0) in kept


@pytest.mark.parametrize("max_points", [-1, 0, 1])
def test_needs_two_points(max_points: int) -> None:
    with pytest.raises(ValueError, match="at least 2"):
        lttb([(0.0, 0.0)], max_points)
