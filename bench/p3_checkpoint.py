"""P3: PEDL checkpoint save + restore beside two copies of the same bytes (``shutil.copytree``
of the checkpoint directory there, and of that copy back).

    .venv/bin/python bench/p3_checkpoint.py --case tiny|huge [--min-reps 15] [--out FILE.jsonl]

The peer is two copies, not one: a save writes the bytes once and a restore reads them once,
so the fair yardstick is a copy there and a copy back (the goal: save + restore ≤ 1.3 times the
two copies).

A controller trains the case's model for 2 batches (building every model and optimizer
variable) and writes its closing checkpoint, which serves as PEDL's warm-up (Keras's save
and load run once untimed as theirs). Then, per
repetition:

- PEDL: ``controller._checkpoint()`` (variables, RNG, data and callback state, code copy,
  metadata, atomic rename in ``SharedFSStorage``) then ``controller._restore(id)``;
- two copies: ``shutil.copytree`` of that checkpoint directory to a new directory, and of the
  copy back to another new directory;
- Keras (``--keras``, the default; ``--no-keras`` leaves them out): the same model's
  ``model.save`` (a ``.keras`` file) + ``keras.saving.load_model``, and ``save_weights`` +
  ``load_weights`` (an ``.weights.h5`` file): what a user without PEDL would call.

Everything stays in the page cache (warm runs, the same for all); ``os.sync()`` runs before each
timed step (untimed) so that write-back of an earlier step does not land in a later one.
The order of the steps rotates from repetition to repetition. The ratio is (save + restore) /
(copy + copy back); beside it, Keras's save + load over PEDL's (issue 38: keep ≥ 5).
Repetitions go on until the median ratio's ~95% interval (order statistics,
``bench/_env.py``) is within ±``--rel-halfwidth`` of the median (at least ``--min-reps``, at
most ``--max-reps``; ``--reps N`` runs exactly N). Each repetition's row carries the load
average before and after it; prints one JSON summary line with the interval, the repetitions
taken, the load averages seen and the machine.
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

import _env
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
    parser.add_argument("--min-reps", type=int, default=15)
    parser.add_argument("--max-reps", type=int, default=40)
    parser.add_argument("--rel-halfwidth", type=float, default=0.05)
    parser.add_argument("--reps", type=int, default=None, help="exactly this many repetitions")
    parser.add_argument(
        "--keras",
        action=argparse.BooleanOptionalAction,
        default=True,
        help="also time Keras's model.save + load_model and save_weights + load_weights",
    )
    parser.add_argument("--out", type=Path, default=None)
    args = parser.parse_args()
    if args.reps is not None:
        args.min_reps = args.max_reps = args.reps
    rows: list[dict[str, Any]] = []
    with tempfile.TemporaryDirectory(prefix="pedl-bench-p3-") as tmp:
        storage = Path(tmp) / "checkpoints"
        recorder = pedl_harness.Recorder()
        controller = pedl_harness.make_controller(args.case, 2, storage, recorder)
        controller.run()  # its closing checkpoint is the first one the two copies copy

        def keras_save_load(row: dict[str, Any]) -> None:
            import keras

            path = Path(tmp) / "model.keras"
            row["keras_save_s"] = timed(lambda: controller.model.save(path))
            row["keras_load_s"] = timed(lambda: keras.saving.load_model(path))
            path.unlink()

        def keras_weights(row: dict[str, Any]) -> None:
            path = Path(tmp) / "model.weights.h5"
            row["keras_save_weights_s"] = timed(lambda: controller.model.save_weights(path))
            row["keras_load_weights_s"] = timed(lambda: controller.model.load_weights(path))
            path.unlink()

        if args.keras:  # their warm-up, as PEDL's closing checkpoint is PEDL's
            keras_save_load({})
            keras_weights({})

        def repetition(rep: int) -> float:
            row: dict[str, Any] = {"case": args.case, "rep": rep}
            load = _env.Load.start()

            def pedl(row: dict[str, Any] = row) -> None:
                row["save_s"] = timed(controller._checkpoint)
                storage_id = recorder.checkpoints[-1][0]
                row["restore_s"] = timed(lambda: controller._restore(storage_id))
                row["bytes"] = sum(list_resources(storage / storage_id).values())

            def two_copies(row: dict[str, Any] = row) -> None:
                source = storage / recorder.checkpoints[-1][0]
                there, back = Path(tmp) / "there", Path(tmp) / "back"
                row["copy_s"] = timed(lambda: shutil.copytree(source, there))
                row["copy_back_s"] = timed(lambda: shutil.copytree(there, back))
                shutil.rmtree(there)
                shutil.rmtree(back)

            steps: list[Callable[[], None]] = [pedl, two_copies]
            if args.keras:
                steps += [lambda: keras_save_load(row), lambda: keras_weights(row)]
            for i in range(len(steps)):  # the order rotates from repetition to repetition
                steps[(rep + i) % len(steps)]()
            # the copies copy the latest checkpoint: this or the previous rep's
            row["two_copies_s"] = row["copy_s"] + row["copy_back_s"]
            row["ratio"] = (row["save_s"] + row["restore_s"]) / row["two_copies_s"]
            row |= load.stop()
            rows.append(row)
            for stale, _ in recorder.checkpoints[:-1]:
                shutil.rmtree(storage / stale, ignore_errors=True)
            ratio: float = row["ratio"]
            return ratio

        repeated = _env.repeat_until_narrow(
            repetition,
            min_reps=args.min_reps,
            max_reps=args.max_reps,
            rel_halfwidth=args.rel_halfwidth,
        )
    if args.out:
        with open(args.out, "a") as f:
            for row in rows:
                f.write(json.dumps(row) + "\n")
    pedl_s = [r["save_s"] + r["restore_s"] for r in rows]
    copies_s = [r["two_copies_s"] for r in rows]
    interval = repeated.intervals["value"]
    summary = {
        "benchmark": "p3 save + restore over two copies",
        "case": args.case,
        "reps": repeated.reps,
        "narrow": repeated.narrow,
        "goal_rel_halfwidth": args.rel_halfwidth,
        "ratio_median_interval": [interval.low, interval.high],
        "ratio_interval_coverage": round(interval.coverage, 4),
        "checkpoint_bytes": rows[-1]["bytes"],
        "save_s": spread([r["save_s"] for r in rows]),
        "restore_s": spread([r["restore_s"] for r in rows]),
        "pedl_s": spread(pedl_s),
        "two_copies_s": spread(copies_s),
        "ratio_of_medians": statistics.median(pedl_s) / statistics.median(copies_s),
        "ratio": spread([r["ratio"] for r in rows]) | {"max": max(r["ratio"] for r in rows)},
        "loadavg_1m_range": _env.load_range(rows),
        "machine": _env.machine(),
    }
    if args.keras:
        keras_s = [r["keras_save_s"] + r["keras_load_s"] for r in rows]
        weights_s = [r["keras_save_weights_s"] + r["keras_load_weights_s"] for r in rows]
        over_pedl = _env.median_interval([k / p for k, p in zip(keras_s, pedl_s, strict=True)])
        weights_over_pedl = _env.median_interval(
            [w / p for w, p in zip(weights_s, pedl_s, strict=True)]
        )
        summary |= {
            "keras_save_load_s": spread(keras_s),
            "keras_weights_s": spread(weights_s),
            "keras_save_load_over_pedl": over_pedl.as_dict(),
            "keras_weights_over_pedl": weights_over_pedl.as_dict(),
        }
    print(json.dumps(summary))


if __name__ == "__main__":
    main()
