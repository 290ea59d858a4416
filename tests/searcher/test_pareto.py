"""Pareto ranking (``pedl.searcher``'s non-dominated sort, hypervolume and contributions):
property tests against brute-force definitions."""

from __future__ import annotations

import itertools
import math

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from pedl.searcher import (
    dominates,
    front_ranks,
    hypervolume,
    hypervolume_contributions,
    non_dominated_sort,
    pareto_front,
    pareto_order,
    reference_point,
)

PROPERTY = settings(max_examples=150, suppress_health_check=[HealthCheck.too_slow])


def _points(dims: int, max_size: int = 12) -> st.SearchStrategy[list[tuple[float, ...]]]:
    value = st.integers(min_value=0, max_value=9).map(float)
    return st.lists(st.tuples(*[value] * dims), max_size=max_size)


any_points = st.integers(min_value=1, max_value=4).flatmap(_points)


def _brute_hypervolume(points: list[tuple[float, ...]], reference: list[float]) -> float:
    """Inclusion-exclusion over every subset: the union of the boxes [p, reference]."""
    inside = [p for p in points if all(x < r for x, r in zip(p, reference, strict=True))]
    total = 0.0
    for size in range(1, len(inside) + 1):
        for subset in itertools.combinations(inside, size):
            corner = [max(values) for values in zip(*subset, strict=True)]
            box = math.prod(r - c for r, c in zip(reference, corner, strict=True))
            total += box if size % 2 else -box
    return total


@PROPERTY
@given(any_points)
def test_fronts_partition_the_points_and_each_is_dominated_only_by_earlier_ones(
    points: list[tuple[float, ...]],
) -> None:
    fronts = non_dominated_sort(points)
    assert sorted(i for front in fronts for i in front) == list(range(len(points)))
    for k, front in enumerate(fronts):
        assert front == sorted(front)
        for i in front:
            assert not any(dominates(points[j], points[i]) for j in front)
            later = [j for f in fronts[k + 1 :] for j in f]
            assert not any(dominates(points[j], points[i]) for j in later)
            if k > 0:
                assert any(dominates(points[j], points[i]) for j in fronts[k - 1])


@PROPERTY
@given(any_points)
def test_the_front_is_exactly_the_non_dominated_points(points: list[tuple[float, ...]]) -> None:
    expected = [i for i, p in enumerate(points) if not any(dominates(q, p) for q in points)]
    assert pareto_front(points) == expected


@PROPERTY
@given(st.integers(min_value=1, max_value=4).flatmap(lambda d: _points(d, max_size=7)))
def test_hypervolume_is_the_volume_of_the_union_of_boxes(points: list[tuple[float, ...]]) -> None:
    dims = len(points[0]) if points else 2
    reference = [10.0] * dims
    assert hypervolume(points, reference) == pytest.approx(_brute_hypervolume(points, reference))


@PROPERTY
@given(_points(2), st.integers(min_value=1, max_value=5))
def test_a_constant_third_objective_multiplies_the_area(
    points: list[tuple[float, ...]], depth: int
) -> None:
    area = hypervolume(points, [10.0, 10.0])
    lifted = [(x, y, 0.0) for x, y in points]
    assert hypervolume(lifted, [10.0, 10.0, float(depth)]) == pytest.approx(area * depth)


@PROPERTY
@given(any_points, st.data())
def test_adding_a_point_never_lowers_the_hypervolume(
    points: list[tuple[float, ...]], data: st.DataObject
) -> None:
    dims = len(points[0]) if points else 1
    value = st.integers(min_value=0, max_value=9).map(float)
    extra = data.draw(st.tuples(*[value] * dims))
    reference = [10.0] * dims
    assert hypervolume([*points, extra], reference) >= hypervolume(points, reference) - 1e-9


@PROPERTY
@given(any_points)
def test_contributions_are_what_each_point_alone_adds(points: list[tuple[float, ...]]) -> None:
    if not points:
        return
    reference = reference_point(points)
    total = hypervolume(points, reference)
    contributions = hypervolume_contributions(points, reference)
    for i, p in enumerate(points):
        others = points[:i] + points[i + 1 :]
        assert contributions[i] == pytest.approx(total - hypervolume(others, reference))
        if any(dominates(q, p) for q in points) or p in others:
            assert contributions[i] == pytest.approx(0.0)
    # a point of the front that no other point equals has a share of its own
    for i in pareto_front(points):
        if points.count(points[i]) == 1:
            assert contributions[i] > 0


@PROPERTY
@given(any_points)
def test_pareto_order_ranks_by_front_then_contribution(points: list[tuple[float, ...]]) -> None:
    order = pareto_order(points)
    assert sorted(order) == list(range(len(points)))
    fronts = non_dominated_sort(points)
    front_of = {i: k for k, front in enumerate(fronts) for i in front}
    assert [front_of[i] for i in order] == sorted(front_of[i] for i in order)
    # no point ranks ahead of one that dominates it
    position = {i: n for n, i in enumerate(order)}
    for i, j in itertools.permutations(range(len(points)), 2):
        if dominates(points[i], points[j]):
            assert position[i] < position[j]


def test_pareto_order_breaks_ties_in_a_front_by_contribution() -> None:
    # (0, 9) and (9, 0) are the extremes; (1, 1) adds the most area, (5, 4) the least
    points = [(0.0, 9.0), (5.0, 4.0), (1.0, 1.0), (9.0, 0.0), (9.0, 9.0)]
    order = pareto_order(points)
    assert order[0] == 2
    assert order[-1] == 4  # dominated: the last front
    front = order[:4]
    assert front.index(1) > front.index(0) or front.index(1) > front.index(3)


def test_hypervolume_of_a_few_points() -> None:
    assert hypervolume([(1.0, 2.0), (2.0, 1.0)], [3.0, 3.0]) == pytest.approx(3.0)
    assert hypervolume([(0.0, 0.0, 0.0)], [1.0, 2.0, 3.0]) == pytest.approx(6.0)
    assert hypervolume([(4.0, 0.0)], [3.0, 3.0]) == 0.0
    assert hypervolume([], [1.0]) == 0.0


@PROPERTY
@given(
    st.lists(
        st.tuples(st.one_of(st.none(), st.integers(0, 9).map(float)), st.integers(0, 9).map(float)),
        max_size=10,
    )
)
def test_front_ranks_negate_larger_is_better_and_leave_out_missing_values(
    vectors: list[tuple[float | None, float]],
) -> None:
    ranks = front_ranks(vectors, [False, True])  # the first is larger-is-better
    complete = [i for i, (a, _) in enumerate(vectors) if a is not None]
    assert [r is None for r in ranks] == [a is None for a, _ in vectors]
    points = [(-vectors[i][0], vectors[i][1]) for i in complete]  # type: ignore[operator]
    for k, front in enumerate(non_dominated_sort(points)):
        assert all(ranks[complete[i]] == k for i in front)
