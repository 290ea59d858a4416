"""P6's trace summary (``bench/p6_ui.py``'s ``main_thread_tasks``): which renderer is the
page's, how much of its main thread the tasks took, and each event's own time. A made-up
trace: no browser is run."""

from __future__ import annotations

import sys
from pathlib import Path
from typing import Any

import pytest
from hypothesis import given
from hypothesis import strategies as st

sys.path.insert(0, str(Path(__file__).parents[2] / "bench"))
p6_ui = pytest.importorskip("p6_ui")


def _thread(pid: int) -> dict[str, Any]:
    return {"ph": "M", "name": "thread_name", "pid": pid, "tid": pid,
            "args": {"name": "CrRendererMain"}}  # fmt: skip


def _span(pid: int, name: str, ts: int, dur: int) -> dict[str, Any]:
    return {"ph": "X", "name": name, "pid": pid, "tid": pid, "ts": ts, "dur": dur}


def test_the_page_is_the_renderer_that_ran_script_and_self_times_exclude_children() -> None:
    events = [
        _thread(1),
        _thread(2),
        # renderer 1: long tasks but no script (another tab's, say)
        _span(1, "RunTask", 0, 5_000_000),
        # renderer 2: two tasks; in the first, script that draws, in the second a layout
        _span(2, "RunTask", 0, 300_000),
        _span(2, "v8.callFunction", 10_000, 200_000),
        _span(2, "CanvasRenderingContext2D::FinalizeFrame", 50_000, 120_000),
        _span(2, "RunTask", 400_000, 100_000),
        {"ph": "B", "name": "Layout", "pid": 2, "tid": 2, "ts": 410_000},
        {"ph": "E", "name": "Layout", "pid": 2, "tid": 2, "ts": 470_000},
    ]
    summary = p6_ui.main_thread_tasks({"traceEvents": events})
    assert summary["main_thread_ms"] == 400.0
    assert summary["self_ms_by_event"] == {
        "CanvasRenderingContext2D::FinalizeFrame": 120.0,
        "RunTask": 140.0,
        "v8.callFunction": 80.0,
        "Layout": 60.0,
    }


@given(st.lists(st.tuples(st.integers(1, 1000), st.integers(0, 1000)), min_size=1, max_size=20))
def test_self_times_add_up_to_the_tasks(tasks: list[tuple[int, int]]) -> None:
    # back-to-back tasks, each with one child of at most its length
    events, start = [_thread(7)], 0
    for length, child in tasks:
        events.append(_span(7, "RunTask", start, length * 1000))
        events.append(_span(7, "v8.callFunction", start, min(child, length) * 1000))
        start += length * 1000
    summary = p6_ui.main_thread_tasks(events)
    assert summary["main_thread_ms"] == pytest.approx(sum(length for length, _ in tasks))
    assert sum(summary["self_ms_by_event"].values()) == pytest.approx(summary["main_thread_ms"])
