"""P6's side-by-side summary (``bench/p6_ab.py``'s ``summary``): each build's medians, and each
later build's differences from the first, paired round by round. Made-up loads: no browser."""

from __future__ import annotations

import statistics
import sys
from pathlib import Path
from typing import Any

import pytest
from hypothesis import given
from hypothesis import strategies as st

sys.path.insert(0, str(Path(__file__).parents[2] / "bench"))
p6_ab = pytest.importorskip("p6_ab")
METRICS = p6_ab.PAGE_METRICS


def _load(build: str, round_: int, value: float) -> dict[str, Any]:
    return {"build": build, "round": round_, **{metric: value for metric in METRICS}}


def test_differences_are_paired_by_round_not_by_median() -> None:
    # The machine's speed moves from round to round; the later build is lower in 2 of 3 rounds
    # though its median is higher.
    before, after = [100.0, 200.0, 300.0], [95.0, 500.0, 290.0]
    rows = []
    for round_, (b, a) in enumerate(zip(before, after, strict=True)):
        rows += [_load("before", round_, b), _load("after", round_, a)]
    result = p6_ab.summary(rows, ["before", "after"])
    for metric in METRICS:
        assert result["medians_ms"]["before"][metric] == 200.0
        assert result["medians_ms"]["after"][metric] == 290.0
        assert result["after_minus_before"][metric] == {
            "median_ms": -5.0,
            "lower_in": 2,
            "rounds": 3,
        }


@given(
    st.lists(
        st.tuples(st.floats(0, 1_000), st.floats(0, 1_000), st.floats(0, 1_000)),
        min_size=1,
        max_size=20,
    )
)
def test_each_later_build_against_the_first(values: list[tuple[float, float, float]]) -> None:
    names = ["a", "b", "c"]
    rows = [
        _load(name, r, v)
        for r, triple in enumerate(values)
        for name, v in zip(names, triple, strict=True)
    ]
    result = p6_ab.summary(rows, names)
    assert set(result) == {"medians_ms", "b_minus_a", "c_minus_a"}
    for k, name in enumerate(names[1:], start=1):
        paired = [triple[k] - triple[0] for triple in values]
        diff = result[f"{name}_minus_a"]["ThreadTime"]
        assert diff["median_ms"] == round(statistics.median(paired), 1)
        assert diff["lower_in"] == sum(d < 0 for d in paired)
        assert diff["rounds"] == len(values)
