"""Trials over slots: each attempt placed on the slots it held, from start and end times.

The master does not name slots, only counts them, so slots are numbered here: attempts are
placed in start order, each on the lowest-numbered slots free at its start (an attempt of a
trial with ``slots_per_trial`` slots takes that many), so attempts that overlap in time never
share a slot and no more slots are used than ever ran at once.
"""

from __future__ import annotations

import heapq
from collections.abc import Sequence
from typing import NamedTuple


class Span(NamedTuple):
    start: float
    end: float | None
    """``None``: still running."""


def assign_slots(spans: Sequence[Span], width: int = 1) -> list[int]:
    """For each span (in the given order), the first of the ``width`` consecutive slot
    numbers it is drawn on. Spans are placed by start time (ties in the given order); a slot
    is free again at the end time of the span that held it (a span that starts exactly then
    may take it); a running span holds its slots to the end."""
    if width < 1:
        raise ValueError(f"width must be at least 1, got {width}")
    order = sorted(range(len(spans)), key=lambda i: (spans[i].start, i))
    busy: list[tuple[float, int]] = []  # (end, block) of the blocks in use
    free: list[int] = []  # blocks released, smallest first
    blocks = 0
    placed = [0] * len(spans)
    for index in order:
        span = spans[index]
        while busy and busy[0][0] <= span.start:
            heapq.heappush(free, heapq.heappop(busy)[1])
        if free:
            block = heapq.heappop(free)
        else:
            block = blocks
            blocks += 1
        placed[index] = block * width
        heapq.heappush(busy, (float("inf") if span.end is None else span.end, block))
    return placed
