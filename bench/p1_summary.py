"""P1 summary: per-pair PEDL/plain ratios from a driver's JSON-lines file, three ways.

    .venv/bin/python bench/p1_summary.py bench/results/p1_large.jsonl [MORE.jsonl ...]

- ``window``: samples/s over the whole timed window (the result the goal refers to);
- ``chunk``: from the median 100-batch chunk time of each run (robust to bursts of load,
  but it can hide plain ``fit``'s epoch-boundary cost where that falls in few chunks);
- ``cpu``: from the process's CPU time per batch (less sensitive to other processes).

A ratio above 1 means PEDL is faster (mostly: plain ``fit`` restarts its input every epoch;
see ``p1_throughput.py``). Pairs missing a statistic are skipped for it. Then the load
averages and machines the runs recorded.
"""

from __future__ import annotations

import argparse
import json
from collections import defaultdict
from pathlib import Path
from typing import Any

import _env
from p1_driver import summarize

STATISTICS = {
    "window": "ms_per_batch",
    "chunk": "chunk_ms_per_batch_median",
    "cpu": "cpu_ms_per_batch",
}


def pair_ratios(rows: list[dict[str, Any]], key: str) -> list[float]:
    pairs: dict[tuple[str, int], dict[str, dict[str, Any]]] = defaultdict(dict)
    for row in rows:
        pairs[row["file"], row["pair"]][row["mode"]] = row
    return [
        runs["plain"][key] / runs["pedl"][key]
        for _, runs in sorted(pairs.items())
        if len(runs) == 2 and key in runs["plain"] and key in runs["pedl"]
    ]


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("results", type=Path, nargs="+")
    args = parser.parse_args()
    rows = [
        {"file": str(path), **json.loads(line)}
        for path in args.results
        for line in path.read_text().splitlines()
        if line
    ]
    for name, key in STATISTICS.items():
        ratios = pair_ratios(rows, key)
        if ratios:
            print(json.dumps({"statistic": name, **summarize(ratios)}))
    machines = {json.dumps(r["machine"], sort_keys=True) for r in rows if "machine" in r}
    # runs recorded before bench/_env.py carry neither
    print(json.dumps({"loadavg_1m_range": _env.load_range(rows), "machines": sorted(machines)}))
    for mode in ("pedl", "plain"):
        per_batch = sorted(r["ms_per_batch"] for r in rows if r["mode"] == mode)
        print(f"{mode}: ms/batch median {per_batch[len(per_batch) // 2]:.2f} (n={len(per_batch)})")


if __name__ == "__main__":
    main()
