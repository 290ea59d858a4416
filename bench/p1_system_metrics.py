"""The overhead of a trial process's system metrics on P1 throughput (issue 24, item 5:
"Overhead measured (<= 1% of P1 throughput)").

    .venv/bin/python bench/p1_system_metrics.py [--pairs 8] [--interval 1] [--out FILE.jsonl]

Two measurements:

1. The sampler's own cost: ``SystemSampler.sample()`` taken 300 times in this process (wall
   and CPU time per sample), and a batch of 6 samples JSON-encoded as the trial posts it.
   The sampler's thread holds the interpreter for at most that long per interval, so its
   share of a training process's time is at most (cost per sample) / interval.
2. P1 "large" (``p1_throughput.py --mode pedl --case large``, the model with ~10 ms steps)
   in pairs of fresh processes, without and with the sampler running beside training every
   ``--interval`` seconds (default 1, the shortest interval allowed: the worst case; the
   default is 5), the order alternating from pair to pair. Ratio = with ÷ without samples/s.

Prints one JSON line per run and a summary, each with the load averages around it and the
machine (``bench/_env.py``); ``--out`` appends the runs as JSON lines.
"""

from __future__ import annotations

import argparse
import json
import statistics
import subprocess
import sys
import time
from pathlib import Path
from typing import Any

import _env
from p1_driver import summarize

from pedl.exec._system_metrics import BATCH_SAMPLES, SystemSampler

HERE = Path(__file__).parent


def sampler_cost(samples: int = 300) -> dict[str, float]:
    """Median wall and CPU microseconds of one sample and of encoding one batch."""
    sampler = SystemSampler()
    walls, cpus = [], []
    taken = []
    for _ in range(samples):
        wall, cpu = time.perf_counter(), time.process_time()
        taken.append(sampler.sample())
        walls.append(time.perf_counter() - wall)
        cpus.append(time.process_time() - cpu)
    sampler.close()
    encode = []
    for i in range(0, len(taken) - BATCH_SAMPLES, BATCH_SAMPLES):
        start = time.perf_counter()
        json.dumps({"rank": 0, "samples": taken[i : i + BATCH_SAMPLES]})
        encode.append(time.perf_counter() - start)
    return {
        "sample_wall_us_median": 1e6 * statistics.median(walls),
        "sample_wall_us_p95": 1e6 * statistics.quantiles(walls, n=20)[-1],
        "sample_cpu_us_mean": 1e6 * statistics.fmean(cpus),
        "batch_encode_us_median": 1e6 * statistics.median(encode),
    }


def measure(interval: float) -> dict[str, Any]:
    command = [
        sys.executable,
        str(HERE / "p1_throughput.py"),
        "--mode",
        "pedl",
        "--case",
        "large",
        "--system-metrics",
        str(interval),
    ]
    done = subprocess.run(command, capture_output=True, text=True, check=True)
    result: dict[str, Any] = json.loads(done.stdout.strip().splitlines()[-1])
    return result


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--pairs", type=int, default=8)
    parser.add_argument("--interval", type=float, default=1.0)
    parser.add_argument("--out", type=Path, default=None)
    args = parser.parse_args()
    load = _env.Load.start()
    cost = sampler_cost()
    print(json.dumps({"sampler": cost, **load.stop(), "machine": _env.machine()}), flush=True)
    ratios, cpu_ratios = [], []
    rows: list[dict[str, Any]] = []
    for pair in range(args.pairs):
        order = [0.0, args.interval] if pair % 2 == 0 else [args.interval, 0.0]
        runs = {interval: measure(interval) for interval in order}
        rows.extend(runs.values())
        for run in runs.values():
            print(json.dumps(run), flush=True)
            if args.out:
                with args.out.open("a") as out:
                    out.write(json.dumps({"pair": pair, **run}) + "\n")
        off, on = runs[0.0], runs[args.interval]
        ratios.append(on["samples_per_s"] / off["samples_per_s"])
        cpu_ratios.append(off["cpu_ms_per_batch"] / on["cpu_ms_per_batch"])
    bound = cost["sample_wall_us_p95"] / 1e6 / args.interval
    print(
        json.dumps(
            {
                "interval_s": args.interval,
                "throughput_ratio_with_over_without": summarize(ratios),
                "cpu_per_batch_ratio_without_over_with": summarize(cpu_ratios),
                "sampler_share_bound": bound,
                "loadavg_1m_range": _env.load_range(rows),
                "machine": rows[0]["machine"] if rows else _env.machine(),
            }
        )
    )


if __name__ == "__main__":
    main()
