"""P1 driver: interleaved PEDL/plain pairs, each run in a fresh process, until resolved.

    .venv/bin/python bench/p1_driver.py --case large|tiny [--out FILE.jsonl]

Each pair runs ``p1_throughput.py --mode pedl`` and ``--mode plain`` back to back (the order
alternates from pair to pair, so drift in the machine's load hits both sides alike); the
pair's ratio is PEDL samples/s over plain samples/s. Pairs are added until the 95% bootstrap
confidence interval of the median ratio is within +-0.02 (at least ``--min-pairs``, at most
``--max-pairs``). Every run is appended to ``--out`` as a JSON line; a summary is printed.
"""

from __future__ import annotations

import argparse
import json
import random
import statistics
import subprocess
import sys
from pathlib import Path
from typing import Any

HERE = Path(__file__).parent
RESOLUTION = 0.02


def measure(mode: str, case: str, epochs: int | None) -> dict[str, Any]:
    command = [sys.executable, str(HERE / "p1_throughput.py"), "--mode", mode, "--case", case]
    if epochs:
        command += ["--epochs", str(epochs)]
    done = subprocess.run(command, capture_output=True, text=True, check=True)
    result: dict[str, Any] = json.loads(done.stdout.strip().splitlines()[-1])
    return result


def bootstrap_median_ci(values: list[float], rounds: int = 4000) -> tuple[float, float]:
    """95% percentile-bootstrap interval of the median of ``values`` (fixed seed)."""
    rng = random.Random(0)
    medians = sorted(statistics.median(rng.choices(values, k=len(values))) for _ in range(rounds))
    return medians[int(0.025 * rounds)], medians[int(0.975 * rounds) - 1]


def summarize(ratios: list[float]) -> dict[str, Any]:
    q1, _, q3 = statistics.quantiles(ratios, n=4) if len(ratios) > 1 else (ratios[0],) * 3
    lo, hi = bootstrap_median_ci(ratios)
    return {
        "pairs": len(ratios),
        "median": statistics.median(ratios),
        "ci95": [lo, hi],
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
    parser.add_argument("--out", type=Path, default=None)
    args = parser.parse_args()
    ratios: list[float] = []
    for pair in range(args.max_pairs):
        modes = ["pedl", "plain"] if pair % 2 == 0 else ["plain", "pedl"]
        runs = {mode: measure(mode, args.case, args.epochs) for mode in modes}
        ratio = runs["pedl"]["samples_per_s"] / runs["plain"]["samples_per_s"]
        ratios.append(ratio)
        if args.out:
            with open(args.out, "a") as f:
                for mode in modes:
                    f.write(json.dumps({"pair": pair, **runs[mode]}) + "\n")
        print(
            f"pair {pair}: pedl {runs['pedl']['samples_per_s']:.0f}/s "
            f"plain {runs['plain']['samples_per_s']:.0f}/s ratio {ratio:.3f}",
            flush=True,
        )
        if len(ratios) >= args.min_pairs:
            lo, hi = bootstrap_median_ci(ratios)
            if (hi - lo) / 2 <= RESOLUTION:
                break
    print(json.dumps({"case": args.case, **summarize(ratios)}))


if __name__ == "__main__":
    main()
