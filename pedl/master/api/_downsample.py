"""Downsampling a series for drawing: largest-triangle-three-buckets (Steinarsson, 2013)."""

from __future__ import annotations

from collections.abc import Sequence
from typing import TypeVar

Point = TypeVar("Point", bound=Sequence[float])


def lttb(points: Sequence[Point], max_points: int) -> list[Point]:
    """At most ``max_points`` of ``points`` (sorted by x), chosen to keep the series' shape.

    The first and the last point are always kept; between them the points are cut into
    ``max_points - 2`` buckets of (nearly) equal count and from each bucket the point that
    makes the largest triangle with the point kept before it and the average of the next
    bucket is kept. The result is a subsequence of ``points`` (the same objects, in order);
    a series of at most ``max_points`` points is returned whole. Raises ``ValueError`` when
    ``max_points`` is below 2.
    """
    if max_points < 2:
        raise ValueError(f"max_points must be at least 2, got {max_points}")
    count = len(points)
    if count <= max_points:
        return list(points)
    buckets = max_points - 2
    if buckets == 0:
        return [points[0], points[-1]]
    width = (count - 2) / buckets
    kept = [points[0]]
    previous = points[0]
    for bucket in range(buckets):
        start = int(bucket * width) + 1
        end = int((bucket + 1) * width) + 1
        next_end = min(int((bucket + 2) * width) + 1, count)
        if bucket == buckets - 1:
            next_end = count  # the last point alone stands for the next bucket
            next_start = count - 1
        else:
            next_start = end
        span = next_end - next_start
        avg_x = sum(float(p[0]) for p in points[next_start:next_end]) / span
        avg_y = sum(float(p[1]) for p in points[next_start:next_end]) / span
        ax, ay = float(previous[0]), float(previous[1])
        best = points[start]
        best_area = -1.0
        for candidate in points[start:end]:
            area = abs(
                (ax - avg_x) * (float(candidate[1]) - ay)
                - (ax - float(candidate[0])) * (avg_y - ay)
            )
            if area > best_area:
                best, best_area = candidate, area
        kept.append(best)
        previous = best
    kept.append(points[-1])
    return kept
