"""Pareto ranking of objective vectors: dominance, non-dominated sorting, hypervolume and each
point's hypervolume contribution, and the order multi-objective searchers rank results in.

Every function here minimises: a caller negates the objectives where larger is better. Points
are sequences of finite floats, all of the same length (the number of objectives); none of
these functions accepts a NaN (callers rank a missing value apart, as the worst).
"""

from __future__ import annotations

import math
from collections.abc import Sequence

Point = Sequence[float]


def dominates(a: Point, b: Point) -> bool:
    """Whether ``a`` Pareto-dominates ``b``: no worse in every objective, better in one."""
    better = False
    for x, y in zip(a, b, strict=True):
        if x > y:
            return False
        if x < y:
            better = True
    return better


def non_dominated_sort(points: Sequence[Point]) -> list[list[int]]:
    """The indices of ``points`` in Pareto fronts, best first (Deb et al.'s fast
    non-dominated sort): front 0 holds the points nothing dominates, front k those only
    points of fronts 0 .. k-1 dominate. Each front lists its indices in ascending order;
    equal points share a front."""
    count = len(points)
    dominated_by: list[list[int]] = [[] for _ in range(count)]
    dominators = [0] * count
    for i in range(count):
        for j in range(i + 1, count):
            if dominates(points[i], points[j]):
                dominated_by[i].append(j)
                dominators[j] += 1
            elif dominates(points[j], points[i]):
                dominated_by[j].append(i)
                dominators[i] += 1
    fronts: list[list[int]] = []
    current = [i for i in range(count) if dominators[i] == 0]
    while current:
        fronts.append(sorted(current))
        following: list[int] = []
        for i in current:
            for j in dominated_by[i]:
                dominators[j] -= 1
                if dominators[j] == 0:
                    following.append(j)
        current = following
    return fronts


def pareto_front(points: Sequence[Point]) -> list[int]:
    """The indices of the non-dominated points (front 0 of :func:`non_dominated_sort`)."""
    fronts = non_dominated_sort(points)
    return fronts[0] if fronts else []


def hypervolume(points: Sequence[Point], reference: Point) -> float:
    """The volume of the region that ``points`` dominate and that ``reference`` bounds (the
    union of the boxes ``[p, reference]``). Points not strictly better than ``reference`` in
    every objective add nothing. Exact: a sweep in two dimensions, slicing along the last
    objective above (fine for the few hundred points of a search)."""
    dims = len(reference)
    inside = [tuple(p) for p in points if all(x < r for x, r in zip(p, reference, strict=True))]
    if not inside or dims == 0:
        return 0.0
    if dims == 1:
        return float(reference[0] - min(p[0] for p in inside))
    inside = [inside[i] for i in pareto_front(inside)]
    if dims == 2:
        volume, bound = 0.0, float(reference[1])
        for x, y in sorted(inside):
            if y < bound:
                volume += (reference[0] - x) * (bound - y)
                bound = y
        return volume
    inside.sort(key=lambda p: p[-1])
    volume = 0.0
    for i, p in enumerate(inside):
        upper = inside[i + 1][-1] if i + 1 < len(inside) else reference[-1]
        if upper > p[-1]:
            below = [q[:-1] for q in inside[: i + 1]]
            volume += (upper - p[-1]) * hypervolume(below, reference[:-1])
    return volume


def hypervolume_contributions(points: Sequence[Point], reference: Point) -> list[float]:
    """How much hypervolume each point alone adds: the hypervolume of all the points less
    that of all but this one (0 for a dominated point, and for each of two equal points)."""
    total = hypervolume(points, reference)
    return [
        max(total - hypervolume([q for j, q in enumerate(points) if j != i], reference), 0.0)
        for i in range(len(points))
    ]


def reference_point(points: Sequence[Point]) -> list[float]:
    """A reference point just worse than every point: each objective's largest value plus a
    tenth of its range (plus 1 where the range is 0), so that every point of the last front
    has a contribution, the extreme ones included."""
    if not points:
        return []
    reference = []
    for values in zip(*points, strict=True):
        low, high = min(values), max(values)
        reference.append(high + ((high - low) / 10 if high > low else 1.0))
    return reference


def pareto_order(points: Sequence[Point]) -> list[int]:
    """The indices of ``points`` from best to worst, as multi-objective ASHA ranks a rung:
    by Pareto front (:func:`non_dominated_sort`); within a front by hypervolume contribution
    (larger first, against :func:`reference_point` of all the points); equal contributions
    by index (earlier first)."""
    if not points:
        return []
    reference = reference_point(points)
    order: list[int] = []
    for front in non_dominated_sort(points):
        if len(front) == 1:
            order += front
            continue
        contributions = hypervolume_contributions([points[i] for i in front], reference)
        ranked = sorted(zip(front, contributions, strict=True), key=lambda fc: (-fc[1], fc[0]))
        order += [i for i, _ in ranked]
    return order


def front_ranks(
    vectors: Sequence[Sequence[float | None]], directions: Sequence[bool]
) -> list[int | None]:
    """The Pareto front (0 the best) each objective vector lies on, with ``directions``
    giving each objective's ``smaller_is_better``; ``None`` for a vector missing a value
    (``None`` or NaN) or of another length, which is on no front."""
    points: list[list[float]] = []
    owners: list[int] = []
    for index, vector in enumerate(vectors):
        if len(vector) != len(directions):
            continue
        values = [v for v in vector if v is not None and math.isfinite(v)]
        if len(values) != len(directions):
            continue
        points.append([v if smaller else -v for v, smaller in zip(values, directions, strict=True)])
        owners.append(index)
    ranks: list[int | None] = [None] * len(vectors)
    for rank, front in enumerate(non_dominated_sort(points)):
        for i in front:
            ranks[owners[i]] = rank
    return ranks
