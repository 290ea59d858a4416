"""P1 driver: PEDL's controller beside plain ``model.fit(epochs=E)``, interleaved pairs of
fresh processes, until the median ratio's interval is narrow.

    .venv/bin/python bench/p1_driver.py --case large|tiny [--out FILE.jsonl]

Each pair runs ``p1_throughput.py --mode pedl`` and ``--mode plain`` back to back (the order
alternates from pair to pair, so drift in the machine's load hits both sides alike); the
pair's ratio is PEDL samples/s over plain ``fit`` samples/s. What the ratio measures is mostly
plain ``fit``'s per-epoch restart, which PEDL does not pay (see ``p1_throughput.py``): the
summary gives the epoch restarts in the timed window. Pairs are added until the median
ratio's ~95% interval (order statistics, ``bench/_env.py``) is within ±``--rel-halfwidth`` of
the median (at least ``--min-pairs``, at most ``--max-pairs``). Every run is appended to
``--out`` as a JSON line (with its load averages and machine); a summary is printed with the
interval, the pairs it took, the load averages seen and the machine.
"""

from __future__ import annotations

import argparse
import json
import statistics
import subprocess
import sys
from pathlib import Path
from typing import Any

import _env

HERE = Path(__file__).parent
RESOLUTION = 0.02
"""The median ratio's interval is narrow within ± this fraction of the median."""


def measure(mode: str, case: str, epochs: int | None) -> dict[str, Any]:
    command = [sys.executable, str(HERE / "p1_throughput.py"), "--mode", mode, "--case", case]
    if epochs:
        command += ["--epochs", str(epochs)]
    done = subprocess.run(command, capture_output=True, text=True, check=True)
    result: dict[str, Any] = json.loads(done.stdout.strip().splitlines()[-1])
    return result


def summarize(ratios: list[float]) -> dict[str, Any]:
    """The ratios' median with its ~95% order-statistic interval, quartiles and range."""
    q1, _, q3 = statistics.quantiles(ratios, n=4) if len(ratios) > 1 else (ratios[0],) * 3
    interval = _env.median_interval(ratios)
    return {
        "pairs": len(ratios),
        "median": interval.median,
        "interval": [interval.low, interval.high],
        "coverage": round(interval.coverage, 4),
        "iqr": [q1, q3],
        "min": min(ratios),
        "max": max(ratios),
    }


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--case", choices=["large", "tiny"], required=True)
    parser.add_argument("--epochs", type=int, default=None)
    parser.add_argument("--min-pairs", type=int, default=8)
    parser.add_argument("--max-pairs", type=int, default=30)
    parser.add_argument("--rel-halfwidth", type=float, default=RESOLUTION)
    parser.add_argument("--out", type=Path, default=None)
    args = parser.parse_args()
    rows: list[dict[str, Any]] = []

    def pair(index: int) -> float:
        modes = ["pedl", "plain"] if index % 2 == 0 else ["plain", "pedl"]
        runs = {mode: measure(mode, args.case, args.epochs) for mode in modes}
        ratio: float = runs["pedl"]["samples_per_s"] / runs["plain"]["samples_per_s"]
        rows.extend(runs.values())
        if args.out:
            with open(args.out, "a") as f:
                for mode in modes:
                    f.write(json.dumps({"pair": index, **runs[mode]}) + "\n")
        print(
            f"pair {index}: pedl {runs['pedl']['samples_per_s']:.0f}/s "
            f"plain fit {runs['plain']['samples_per_s']:.0f}/s ratio {ratio:.3f} "
            f"(load {runs[modes[0]]['loadavg_before'][0]}-{runs[modes[1]]['loadavg_after'][0]})",
            flush=True,
        )
        return ratio

    repeated = _env.repeat_until_narrow(
        pair,
        min_reps=args.min_pairs,
        max_reps=args.max_pairs,
        rel_halfwidth=args.rel_halfwidth,
    )
    summary = {
        "benchmark": "p1 pedl over plain fit (per-epoch restart)",
        "case": args.case,
        **summarize(repeated.values["value"]),
        "narrow": repeated.narrow,
        "goal_rel_halfwidth": args.rel_halfwidth,
        "batches_per_epoch": rows[0]["batches_per_epoch"],
        "plain_epoch_restarts_timed": rows[0]["plain_epoch_restarts_timed"],
        "loadavg_1m_range": _env.load_range(rows),
        "machine": rows[0]["machine"],
    }
    print(json.dumps(summary))


if __name__ == "__main__":
    main()
