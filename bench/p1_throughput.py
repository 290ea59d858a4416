"""P1, one measurement: training samples/s through PEDL's controller, or through plain
``model.fit(epochs=E)``, which restarts its input at every epoch.

Run it in a fresh process per measurement (``p1_driver.py`` runs the two side by side)::

    .venv/bin/python bench/p1_throughput.py --mode pedl|plain --case large|tiny

What the PEDL ÷ plain ratio measures: mostly plain ``fit``'s per-epoch restart (a new
iterator over Keras's array pipeline, its shuffle and epoch-end work: ~0.3 s an epoch on
digits, whose epochs are 57 batches, so "tiny" is dominated by it; "large" has 391 batches an
epoch), which PEDL does not pay (one endless, positioned stream into one ``fit``); beside it,
PEDL's own per-chunk costs. It is not PEDL's overhead over a ``fit`` that never restarts. The
output says how many epoch restarts plain ``fit`` had in the timed window
(``plain_epoch_restarts_timed``).

Both modes train the same model on the same arrays with the same batch size, seed, op
determinism and number of batches, and time the same window: from the end of batch 100
(the first chunk boundary of PEDL's default ``scheduling_unit``, so tracing and warm-up are
excluded) to the end of the last batch (before PEDL's closing validation and checkpoint).
PEDL is timed at its chunk boundaries by the metrics recorder (no callback is added to its
``fit``); plain ``fit`` by a callback that counts batches. Prints one JSON line, with
wall-clock throughput (the result), the median 100-batch chunk time, the process's CPU
time per batch (less sensitive to other processes on a shared machine), the load average
before and after the run and the machine (``bench/_env.py``).
"""

from __future__ import annotations

import argparse
import cProfile
import itertools
import json
import os
import statistics
import tempfile
import time
from pathlib import Path
from typing import Any

os.environ.setdefault("TF_CPP_MIN_LOG_LEVEL", "2")

import _env
import bench_trials
import keras
import pedl_harness
import tensorflow as tf

from pedl.exec._system_metrics import Sample, SystemMetricsReporter

WINDOW_START = 100
EPOCHS = {"tiny": 40, "large": 3}


class BatchClock(keras.callbacks.Callback):
    """Records when each batch in ``marks`` (1-based count over all epochs) ended."""

    def __init__(self, marks: set[int]) -> None:
        super().__init__()
        self.marks = marks
        self.done = 0
        self.times: dict[int, float] = {}
        self.cpu_times: dict[int, float] = {}

    def on_train_batch_end(self, batch: int, logs: dict[str, Any] | None = None) -> None:
        self.done += 1
        if self.done in self.marks:
            self.times[self.done] = time.perf_counter()
            self.cpu_times[self.done] = time.process_time()


def window_samples(n: int, batch_size: int, start: int, end: int) -> int:
    """Samples in batches start+1..end of epochs of ``n`` samples cut into ``batch_size``."""
    per_epoch = -(-n // batch_size)
    last = n - (per_epoch - 1) * batch_size
    return sum(last if g % per_epoch == 0 else batch_size for g in range(start + 1, end + 1))


def median_chunk_seconds(times: dict[int, float], end: int) -> float:
    """Median duration of the full 100-batch chunks in the window (robust to bursts of load).

    Epoch boundaries of plain ``fit`` fall inside some chunks only, so this statistic can
    hide their cost; the primary result is the whole window.
    """
    marks = range(WINDOW_START, end + 1, WINDOW_START)
    return statistics.median(times[b] - times[a] for a, b in itertools.pairwise(marks))


def run_plain(case: str, epochs: int) -> tuple[dict[int, float], dict[int, float]]:
    keras.utils.set_random_seed(pedl_harness.SEED)
    tf.config.experimental.enable_op_determinism()
    x, y = bench_trials.training_data(case)
    model = bench_trials.build_model(case)
    bench_trials.compile_model(model)
    batches = epochs * -(-len(x) // bench_trials.BATCH_SIZE[case])
    clock = BatchClock({*range(WINDOW_START, batches + 1, WINDOW_START), batches})
    model.fit(
        x,
        y,
        batch_size=bench_trials.BATCH_SIZE[case],
        shuffle=True,
        epochs=epochs,
        verbose=0,
        callbacks=[clock],
    )
    return clock.times, clock.cpu_times


def run_pedl(
    case: str, epochs: int, system_interval: float = 0.0
) -> tuple[dict[int, float], dict[int, float]]:
    """PEDL's controller; with ``system_interval`` > 0, the trial process's system metrics
    sampler runs beside it as in a trial process (every batch of samples JSON-encoded as its
    POST body would be; not sent: the master is another process)."""
    x, _ = bench_trials.training_data(case)
    batches = epochs * -(-len(x) // bench_trials.BATCH_SIZE[case])
    recorder = pedl_harness.Recorder()

    def encode(samples: list[Sample]) -> None:
        json.dumps({"rank": 0, "samples": samples})

    reporter = SystemMetricsReporter(encode, system_interval) if system_interval > 0 else None
    try:
        with tempfile.TemporaryDirectory(prefix="pedl-bench-") as tmp:
            controller = pedl_harness.make_controller(case, batches, Path(tmp), recorder)
            controller.run()
    finally:
        if reporter is not None:
            reporter.stop()
    return recorder.boundary_times, recorder.boundary_cpu_times


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--mode", choices=["pedl", "plain"], required=True)
    parser.add_argument("--case", choices=["large", "tiny"], required=True)
    parser.add_argument("--epochs", type=int, default=None, help="passes over the data")
    parser.add_argument("--profile", type=Path, default=None, help="write cProfile stats here")
    parser.add_argument(
        "--system-metrics",
        type=float,
        default=0.0,
        help="PEDL mode: sample system metrics every this many seconds beside training",
    )
    args = parser.parse_args()
    epochs = args.epochs or EPOCHS[args.case]
    if args.mode == "pedl":
        interval = args.system_metrics

        def run(case: str, epochs: int) -> tuple[dict[int, float], dict[int, float]]:
            return run_pedl(case, epochs, interval)
    else:
        run = run_plain
    profiler = cProfile.Profile() if args.profile else None
    if profiler:
        profiler.enable()
    load = _env.Load.start()
    times, cpu_times = run(args.case, epochs)
    load.stop()
    if profiler:
        profiler.disable()
        profiler.dump_stats(args.profile)
    n = len(bench_trials.training_data(args.case)[0])
    batch_size = bench_trials.BATCH_SIZE[args.case]
    per_epoch = -(-n // batch_size)
    end = epochs * per_epoch
    seconds = times[end] - times[WINDOW_START]
    samples = window_samples(n, batch_size, WINDOW_START, end)
    result = {
        "mode": args.mode,
        "case": args.case,
        "system_metrics_interval": args.system_metrics,
        "batches": end - WINDOW_START,
        "samples": samples,
        "seconds": seconds,
        "samples_per_s": samples / seconds,
        "ms_per_batch": 1000 * seconds / (end - WINDOW_START),
        "cpu_ms_per_batch": 1000
        * (cpu_times[end] - cpu_times[WINDOW_START])
        / (end - WINDOW_START),
        "chunk_ms_per_batch_median": 1000 * median_chunk_seconds(times, end) / WINDOW_START,
        "batches_per_epoch": per_epoch,
        # epoch boundaries inside the timed window: plain fit restarts its input at each
        "plain_epoch_restarts_timed": (end - 1) // per_epoch - (WINDOW_START - 1) // per_epoch,
        **load.as_dict(),
        "machine": _env.machine(),
    }
    print(json.dumps(result))


if __name__ == "__main__":
    main()
