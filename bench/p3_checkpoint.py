"""P3: PEDL checkpoint save + restore vs ``shutil.copytree`` of the same directory and back.

    .venv/bin/python bench/p3_checkpoint.py --case tiny|huge [--reps N] [--out FILE.jsonl]

A controller trains the case's model for 2 batches (building every model and optimizer
variable) and writes its closing checkpoint, which serves as the warm-up. Then, per
repetition, in alternating order:

- PEDL: ``controller._checkpoint()`` (variables, RNG, data and callback state, code copy,
  metadata, atomic rename in ``SharedFSStorage``) then ``controller._restore(id)``;
- raw: ``shutil.copytree`` of that checkpoint directory to a new directory, and of the copy
  back to another new directory.

Everything stays in the page cache (warm runs, same for both); ``os.sync()`` runs before each
timed step (untimed) so that write-back of an earlier step does not land in a later one.
The ratio is (save + restore) / (copy + copy back); prints one JSON summary line.
"""

from __future__ import annotations

import argparse
import json
import os
import shutil
import statistics
import tempfile
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

os.environ.setdefault("TF_CPP_MIN_LOG_LEVEL", "2")

import pedl_harness

from pedl.storage import list_resources


def timed(step: Callable[[], object]) -> float:
    os.sync()
    start = time.perf_counter()
    step()
    return time.perf_counter() - start


def spread(values: list[float]) -> dict[str, Any]:
    q1, _, q3 = statistics.quantiles(values, n=4)
    return {"median": statistics.median(values), "iqr": [q1, q3], "min": min(values)}


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--case", choices=["tiny", "huge"], required=True)
    parser.add_argument("--reps", type=int, default=15)
    parser.add_argument("--out", type=Path, default=None)
    args = parser.parse_args()
    rows: list[dict[str, Any]] = []
    with tempfile.TemporaryDirectory(prefix="pedl-bench-p3-") as tmp:
        storage = Path(tmp) / "checkpoints"
        recorder = pedl_harness.Recorder()
        controller = pedl_harness.make_controller(args.case, 2, storage, recorder)
        controller.run()  # its closing checkpoint is the first one the raw copy copies
        for rep in range(args.reps):
            row: dict[str, Any] = {"case": args.case, "rep": rep}

            def pedl(row: dict[str, Any] = row) -> None:
                row["save_s"] = timed(controller._checkpoint)
                storage_id = recorder.checkpoints[-1][0]
                row["restore_s"] = timed(lambda: controller._restore(storage_id))
                row["bytes"] = sum(list_resources(storage / storage_id).values())

            def raw(row: dict[str, Any] = row) -> None:
                source = storage / recorder.checkpoints[-1][0]
                there, back = Path(tmp) / "there", Path(tmp) / "back"
                row["copy_s"] = timed(lambda: shutil.copytree(source, there))
                row["copy_back_s"] = timed(lambda: shutil.copytree(there, back))
                shutil.rmtree(there)
                shutil.rmtree(back)

            for step in (pedl, raw) if rep % 2 == 0 else (raw, pedl):
                step()  # raw copies the latest checkpoint: this or the previous rep's
            row["ratio"] = (row["save_s"] + row["restore_s"]) / (row["copy_s"] + row["copy_back_s"])
            rows.append(row)
            for stale, _ in recorder.checkpoints[:-1]:
                shutil.rmtree(storage / stale, ignore_errors=True)
    if args.out:
        with open(args.out, "a") as f:
            for row in rows:
                f.write(json.dumps(row) + "\n")
    pedl_s = [r["save_s"] + r["restore_s"] for r in rows]
    raw_s = [r["copy_s"] + r["copy_back_s"] for r in rows]
    summary = {
        "case": args.case,
        "reps": len(rows),
        "checkpoint_bytes": rows[-1]["bytes"],
        "save_s": spread([r["save_s"] for r in rows]),
        "restore_s": spread([r["restore_s"] for r in rows]),
        "pedl_s": spread(pedl_s),
        "copy_s": spread(raw_s),
        "ratio_of_medians": statistics.median(pedl_s) / statistics.median(raw_s),
        "ratio": spread([r["ratio"] for r in rows]) | {"max": max(r["ratio"] for r in rows)},
    }
    print(json.dumps(summary))


if __name__ == "__main__":
    main()
