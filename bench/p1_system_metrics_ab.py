"""The system metrics sampler's cost on P1 throughput, measured inside one training run
(issue 24, item 5: "Overhead measured (<= 1% of P1 throughput)").

    .venv/bin/python bench/p1_system_metrics_ab.py [--epochs 40] [--window 3] [--interval 1]

Fresh processes differ from one another by several percent (``p1_system_metrics.py`` pairs
them), which hides a 1% effect. Here one process trains P1 "large" with PEDL's controller for
``--epochs`` passes while a thread switches the trial process's sampler on and off every
``--window`` seconds (on: a ``SystemMetricsReporter`` sampling every ``--interval`` seconds,
each batch of samples JSON-encoded as its POST body; off: none). Each 100-batch chunk that lies
wholly inside one window is that window's; a window's time per batch is its chunks' mean.
Each "on" window is compared with the mean of the "off" windows beside it (so slow drift of
the machine cancels): ratio = off / on time per batch (< 1: the sampler slows training).
Prints one JSON line: the ratios' median and its ~95% interval (order statistics,
``bench/_env.py``), the counts, the load average before and after, and the machine.

An ``--interval`` far below PEDL's shortest (1 s), such as 0.01, amplifies the cost until it
can be measured: the cost is per sample, so the slowdown scales down with the sampling rate
(RESULTS.md, "System metrics overhead", 5).
"""

from __future__ import annotations

import argparse
import itertools
import json
import statistics
import tempfile
import threading
import time
from pathlib import Path

import _env
import bench_trials
import pedl_harness
from p1_throughput import WINDOW_START

from pedl.exec._system_metrics import Sample, SystemMetricsReporter


def alternate(
    window: float, interval: float, stop: threading.Event
) -> list[tuple[float, float, bool]]:
    """Switch the sampler on and off every ``window`` seconds until ``stop``; the windows as
    ``(start, end, on)`` in ``time.perf_counter()`` seconds (filled in as they end)."""
    windows: list[tuple[float, float, bool]] = []

    def encode(samples: list[Sample]) -> None:
        json.dumps({"rank": 0, "samples": samples})

    def run() -> None:
        on = False
        while not stop.is_set():
            start = time.perf_counter()
            reporter = SystemMetricsReporter(encode, interval) if on else None
            stop.wait(window)
            if reporter is not None:
                reporter.stop()
            windows.append((start, time.perf_counter(), on))
            on = not on

    threading.Thread(target=run, name="alternate", daemon=True).start()
    return windows


def window_means(
    times: dict[int, float], windows: list[tuple[float, float, bool]]
) -> list[tuple[bool, float]]:
    """Each window's mean seconds per batch over the chunks wholly inside it (windows without
    one are left out), in order."""
    marks = sorted(b for b in times if b >= WINDOW_START and b % WINDOW_START == 0)
    chunks = [(times[a], times[b], (b - a)) for a, b in itertools.pairwise(marks)]
    means = []
    for start, end, on in windows:
        inside = [(t1 - t0) / n for t0, t1, n in chunks if t0 >= start and t1 <= end]
        if inside:
            means.append((on, statistics.fmean(inside)))
    return means


def neighbour_ratios(means: list[tuple[bool, float]]) -> list[float]:
    """For each "on" window with "off" windows on both sides: off mean / on mean."""
    ratios = []
    for i in range(1, len(means) - 1):
        (before_on, before), (on, value), (after_on, after) = means[i - 1 : i + 2]
        if on and not before_on and not after_on:
            ratios.append((before + after) / 2 / value)
    return ratios


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--epochs", type=int, default=40)
    parser.add_argument("--window", type=float, default=3.0)
    parser.add_argument("--interval", type=float, default=1.0)
    args = parser.parse_args()
    case = "large"
    x, _ = bench_trials.training_data(case)
    batches = args.epochs * -(-len(x) // bench_trials.BATCH_SIZE[case])
    recorder = pedl_harness.Recorder()
    stop = threading.Event()
    load = _env.Load.start()
    with tempfile.TemporaryDirectory(prefix="pedl-bench-") as tmp:
        controller = pedl_harness.make_controller(case, batches, Path(tmp), recorder)
        windows = alternate(args.window, args.interval, stop)
        try:
            controller.run()
        finally:
            stop.set()
            time.sleep(1)  # the last window is recorded
    load.stop()
    ratios = neighbour_ratios(window_means(recorder.boundary_times, windows))
    interval = _env.median_interval(ratios)
    print(
        json.dumps(
            {
                "case": case,
                "epochs": args.epochs,
                "window_s": args.window,
                "interval_s": args.interval,
                "batches": batches,
                "windows": len(windows),
                "compared": len(ratios),
                "ratio_off_over_on_median": interval.median,
                "interval": [interval.low, interval.high],
                "coverage": round(interval.coverage, 4),
                "min": min(ratios),
                "max": max(ratios),
                **load.as_dict(),
                "machine": _env.machine(),
            }
        )
    )


if __name__ == "__main__":
    main()
