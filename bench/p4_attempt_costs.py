"""Where an ASHA search's time goes: the attempts' timeline on the master, and what Keras
charges for a new model.

1. One PEDL ``adaptive_asha`` search of ``p4_asha.py`` (seed ``--seed``, its default settings)
   on a fresh master with 2 slots; then, from the master's own trial logs, each attempt's
   start, first log line of the trial process, validation and exit: how busy the slots were,
   how long a slot stood empty between attempts, and the medians of each stretch.
2. In this process, the digits example's model built afresh ``--models`` times: each one's
   first ``fit`` of an epoch and ``evaluate`` against its second (what tracing and setting up
   a new model costs, which every attempt that builds one pays).

Run from ``bench/``: ``../.venv/bin/python p4_attempt_costs.py [--out FILE.jsonl]``. Prints one
JSON line with the load average and the machine (``_env``).
"""

from __future__ import annotations

import argparse
import base64
import json
import sqlite3
import statistics
import sys
import tempfile
import time
from datetime import datetime
from pathlib import Path
from typing import Any

import _env
import p4_asha
from p5_master import MasterProcess

from pedl import model_def

ROOT = Path(__file__).resolve().parents[1]
STARTED = "[master] starting the trial process"
EXITED = "[master] the trial process exited"


def _logged_at(message: str) -> datetime:
    """The time a trial process's own log line carries (``2026-11-30 17:30:45,433 INFO ...``)."""
    return datetime.fromisoformat(message[:23].replace(",", "."))


def attempt_timeline(database: Path, wall_s: float, slots: int) -> dict[str, Any]:
    """Each attempt's stretches from the master's trial logs (ordered by time)."""
    rows = sqlite3.connect(database).execute(
        "SELECT trial_id, timestamp, message FROM trial_logs ORDER BY timestamp, seq"
    )
    open_: dict[int, dict[str, datetime]] = {}
    attempts: list[dict[str, datetime]] = []
    for trial_id, stamp, message in rows:
        if message.startswith(STARTED):
            open_[trial_id] = {"start": datetime.fromisoformat(stamp)}
        elif trial_id in open_ and " INFO pedl.exec: trial " in message and "hparams" in message:
            open_[trial_id]["first_log"] = _logged_at(message)
        elif trial_id in open_ and "validation at batch" in message:
            open_[trial_id]["validated"] = _logged_at(message)
        elif trial_id in open_ and message.startswith(EXITED):
            attempts.append({**open_.pop(trial_id), "exit": datetime.fromisoformat(stamp)})

    def median_s(a: str, b: str) -> float | None:
        spans = [(x[b] - x[a]).total_seconds() for x in attempts if a in x and b in x]
        return round(statistics.median(spans), 4) if spans else None

    busy = sum((a["exit"] - a["start"]).total_seconds() for a in attempts)
    starts = sorted(a["start"] for a in attempts)
    exits = sorted(a["exit"] for a in attempts)
    # how long a freed slot stood empty: each start after the first `slots` against the
    # latest exit before it
    gaps = [
        (start - max(e for e in exits if e <= start)).total_seconds()
        for start in starts[slots:]
        if any(e <= start for e in exits)
    ]
    return {
        "attempts": len(attempts),
        "busy_slot_s": round(busy, 2),
        "slot_utilization": round(busy / (slots * wall_s), 3),
        "empty_slot_s_median": round(statistics.median(gaps), 4) if gaps else None,
        "start_to_first_log_s": median_s("start", "first_log"),
        "first_log_to_validated_s": median_s("first_log", "validated"),
        "validated_to_exit_s": median_s("validated", "exit"),
    }


def keras_new_model_costs(models: int) -> dict[str, Any]:
    """The digits model built afresh ``models`` times: first and second ``fit`` of an epoch
    (batch 32) and ``evaluate``, seconds each."""
    import keras

    sys.path.insert(0, str(ROOT))
    from examples.digits_keras import data
    from examples.digits_keras.model_def import network

    (x, y), (x_val, y_val) = data.load(0.2)
    rows = []
    for _ in range(models):
        model = network(16, 64, 0.2)
        model.compile(
            optimizer=keras.optimizers.Adam(1e-3),
            loss="sparse_categorical_crossentropy",
            metrics=["accuracy"],
        )
        times = []
        for call in ("fit", "fit", "evaluate", "evaluate"):
            began = time.perf_counter()
            if call == "fit":
                model.fit(x, y, batch_size=32, epochs=1, verbose=0)
            else:
                model.evaluate(x_val, y_val, batch_size=32, verbose=0)
            times.append(time.perf_counter() - began)
        rows.append(
            {
                "first_fit_s": times[0],
                "second_fit_s": times[1],
                "first_evaluate_s": times[2],
                "second_evaluate_s": times[3],
            }
        )
    extra = [
        r["first_fit_s"] - r["second_fit_s"] + r["first_evaluate_s"] - r["second_evaluate_s"]
        for r in rows
    ]
    return {"models": rows, "new_model_extra_s_median": round(statistics.median(extra), 3)}


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--seed", type=int, default=1)
    parser.add_argument("--epochs", type=int, default=27)
    parser.add_argument("--slots", type=int, default=2)
    parser.add_argument("--models", type=int, default=4)
    parser.add_argument("--out", type=Path)
    args = parser.parse_args()

    archive = base64.b64encode(model_def.package(p4_asha.EXAMPLE)).decode()
    load = _env.Load.start()
    with tempfile.TemporaryDirectory(prefix="pedl-p4-attempts-") as tmp:
        home = Path(tmp)
        master = MasterProcess(home, f"sqlite:///{home / 'master.db'}", cpu_slots=args.slots)
        master.start()
        try:
            search = p4_asha.run_search(
                master.client(timeout=60),
                archive,
                "asha",
                args.seed,
                args.epochs,
                dict(p4_asha.ASHA_DEFAULTS),
            )
        finally:
            master.stop()
        timeline = attempt_timeline(home / "master.db", search["wall_s"], args.slots)
    keras_costs = keras_new_model_costs(args.models)
    load.stop()
    row = {
        "benchmark": "p4_attempt_costs",
        "seed": args.seed,
        "search": p4_asha.without_per_trial(search),
        "timeline": timeline,
        "keras": keras_costs,
        **load.as_dict(),
        "machine": _env.machine(),
    }
    print(json.dumps(row))
    if args.out:
        with args.out.open("a") as f:
            f.write(json.dumps(row) + "\n")


if __name__ == "__main__":
    main()
