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


def test_the_page_renderers_worker_threads_are_summed_apart() -> None:
    worker = {"ph": "M", "name": "thread_name", "pid": 2, "tid": 9,
              "args": {"name": "DedicatedWorker thread"}}  # fmt: skip
    other = {"ph": "M", "name": "thread_name", "pid": 1, "tid": 8,
             "args": {"name": "DedicatedWorker thread"}}  # fmt: skip
    events = [
        _thread(1),
        _thread(2),
        worker,
        other,
        _span(2, "RunTask", 0, 100_000),
        _span(2, "v8.callFunction", 0, 50_000),
        # the page's worker: two tasks, one with a child; another renderer's worker: not counted
        {**_span(2, "RunTask", 10_000, 30_000), "tid": 9},
        {**_span(2, "v8.callFunction", 10_000, 20_000), "tid": 9},
        {**_span(2, "RunTask", 50_000, 40_000), "tid": 9},
        {**_span(1, "RunTask", 0, 900_000), "tid": 8},
    ]
    summary = p6_ui.main_thread_tasks(events)
    assert summary["main_thread_ms"] == 100.0
    assert summary["worker_thread_ms"] == 70.0
    assert (
        p6_ui.main_thread_tasks([_thread(3), _span(3, "RunTask", 0, 1000)])["worker_thread_ms"]
        is None
    )


def test_several_traced_loads_are_summarised_by_their_medians() -> None:
    loads = [
        {"ms": 500.0, "main_thread_ms": 400.0, "worker_thread_ms": 90.0,
         "self_ms_by_event": {"Layout": 50.0, "FunctionCall": 100.0}},
        {"ms": 700.0, "main_thread_ms": 300.0, "worker_thread_ms": 110.0,
         "self_ms_by_event": {"Layout": 70.0}},
        {"ms": 600.0, "main_thread_ms": 350.0, "worker_thread_ms": 100.0,
         "self_ms_by_event": {"Layout": 60.0, "FunctionCall": 80.0}},
    ]  # fmt: skip
    summary = p6_ui.median_summary(loads)
    assert summary["loads"] == 3
    assert summary["ms"] == 600.0
    assert summary["main_thread_ms"] == 350.0
    assert summary["main_thread_ms_each"] == [400.0, 300.0, 350.0]
    assert summary["worker_thread_ms"] == 100.0
    # an event missing from a load's summary counts as 0 there
    assert summary["self_ms_by_event"] == {"FunctionCall": 80.0, "Layout": 60.0}
    assert p6_ui.median_summary(loads[:1]) == loads[0]


def test_the_page_is_the_renderer_that_loaded_its_address_where_given() -> None:
    url = "http://127.0.0.1:8080/#/experiments/1/visualization"
    events = [
        _thread(1),
        _thread(2),
        # renderer 1: the browser's own page, running more script than the page
        _span(1, "RunTask", 0, 300_000),
        _span(1, "v8.callFunction", 0, 200_000),
        # renderer 2: the page, whose charts a worker draws
        _span(2, "RunTask", 0, 100_000),
        _span(2, "v8.callFunction", 0, 10_000),
        {**_span(2, "ResourceSendRequest", 20_000, 0), "ph": "I",
         "args": {"data": {"url": "http://127.0.0.1:8080/api/v1/experiments/1"}}},
    ]  # fmt: skip
    assert p6_ui.main_thread_tasks(events, url)["main_thread_ms"] == 100.0
    assert p6_ui.main_thread_tasks(events)["main_thread_ms"] == 300.0
    # an address no renderer loaded: the one that ran the most script
    assert p6_ui.main_thread_tasks(events, "http://127.0.0.1:9/")["main_thread_ms"] == 300.0


def test_the_main_threads_cpu_time_is_its_top_level_tasks_thread_time() -> None:
    # two tasks that waited for a CPU (thread time below their duration), a nested task not
    # counted twice; a trace without thread times has none
    events = [
        _thread(2),
        {**_span(2, "RunTask", 0, 300_000), "tdur": 120_000},
        {**_span(2, "RunTask", 10_000, 100_000), "tdur": 90_000},
        {**_span(2, "RunTask", 400_000, 100_000), "tdur": 40_000},
    ]
    summary = p6_ui.main_thread_tasks(events)
    assert summary["main_thread_ms"] == 400.0
    assert summary["main_thread_cpu_ms"] == 160.0
    assert (
        p6_ui.main_thread_tasks([_thread(3), _span(3, "RunTask", 0, 1000)])["main_thread_cpu_ms"]
        is None
    )
    loads = [{"ms": 1.0, "main_thread_ms": 1.0, "main_thread_cpu_ms": c} for c in (3.0, None, 1.0)]
    assert p6_ui.median_summary(loads)["main_thread_cpu_ms"] == 2.0
