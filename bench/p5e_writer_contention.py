"""P5(e): what slows SQLite's metric writer inside the master: another core's work, or the GIL.

    .venv/bin/python bench/p5e_writer_contention.py [--rounds 3] [--out FILE.jsonl]

P5a compares the master's rows/s with its database layer's alone (``master_over_db_text``).
This runs that database layer (``p5_throughput.run_db_layer``, text form: 4 trials x 40
bodies of 1,000 rows, one transaction each, in this process's one thread) alone and beside
three kinds of other work, each in every round, in turn:

- ``c_process``: a C program busy on the other core (``sha256sum /dev/zero``): shares the
  machine's cores and memory, not the GIL;
- ``python_process``: a Python process busy on the other core: the same, by an interpreter;
- ``python_thread``: a Python thread of this process that never waits: it holds the GIL
  whenever the writer's thread gives it up (around each of SQLite's calls) and hands it back
  only when the switch interval (``sys.getswitchinterval``) asks it to, as the master's
  event loop does while it parses and answers requests; run at the switch intervals given by
  ``--intervals`` (the master's is 0.5 ms, ``pedl.master._serve``).

Prints one JSON line per measurement and a summary: rows/s of each (median of the rounds)
and its ratio to ``alone``, the machine and the load average.
"""

from __future__ import annotations

import argparse
import statistics
import subprocess
import sys
import tempfile
import threading
import time
from collections.abc import Callable, Iterator
from contextlib import AbstractContextManager, contextmanager, nullcontext
from functools import partial
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path.cwd()))  # the checkout run from: its pedl, before the installed one

import _env
import p5_master
from p5_throughput import run_db_layer

from pedl.db import Database

BODIES_PER_TRIAL = 40
ROWS_PER_BODY = 1000


@contextmanager
def busy_process(argv: list[str]) -> Iterator[None]:
    process = subprocess.Popen(argv, stdout=subprocess.DEVNULL)
    try:
        time.sleep(0.3)  # running before the clock starts
        yield
    finally:
        process.kill()
        process.wait()


@contextmanager
def busy_thread(switch_interval: float) -> Iterator[None]:
    stop = threading.Event()

    def spin() -> None:
        count = 0
        while not stop.is_set():
            count += 1

    before = sys.getswitchinterval()
    sys.setswitchinterval(switch_interval)
    thread = threading.Thread(target=spin, daemon=True)
    thread.start()
    try:
        yield
    finally:
        stop.set()
        thread.join()
        sys.setswitchinterval(before)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--rounds", type=int, default=3)
    parser.add_argument(
        "--intervals", default="0.005,0.0005", help="switch intervals (s) for python_thread"
    )
    parser.add_argument("--out", type=Path)
    args = parser.parse_args()
    intervals = [float(value) for value in args.intervals.split(",")]

    conditions: dict[str, Callable[[], AbstractContextManager[None]]] = {
        "alone": nullcontext,
        "c_process": partial(busy_process, ["sha256sum", "/dev/zero"]),
        "python_process": lambda: busy_process([sys.executable, "-c", "n = 0\nwhile True: n += 1"]),
    }
    for interval in intervals:
        conditions[f"python_thread_{interval:g}s"] = partial(busy_thread, interval)

    lines: list[dict[str, Any]] = []
    with tempfile.TemporaryDirectory(prefix="pedl-p5e-") as tmp:
        home = Path(tmp)
        backend = p5_master.make_backend("sqlite", home)
        master = p5_master.MasterProcess(home, backend.url, spare_workers=0)
        try:
            master.start()
            trials = p5_master.make_trials(master, 4)
        finally:
            master.stop()
        database = Database(backend.url)
        next_batch = 0
        try:
            for round_ in range(args.rounds):
                for name, make in conditions.items():
                    with make():
                        result = run_db_layer(
                            database, trials, ROWS_PER_BODY, BODIES_PER_TRIAL, next_batch, text=True
                        )
                    next_batch += BODIES_PER_TRIAL * ROWS_PER_BODY
                    line = {"round": round_, "condition": name, **result}
                    _env.emit(line, args.out)
                    lines.append(line)
        finally:
            database.dispose()
            backend.drop()
    alone = statistics.median(line["rows_per_s"] for line in lines if line["condition"] == "alone")
    medians = {
        name: statistics.median(line["rows_per_s"] for line in lines if line["condition"] == name)
        for name in conditions
    }
    summary = {
        "summary": "p5e",
        "rounds": args.rounds,
        "rows_per_s_median": medians,
        "ratio_to_alone": {name: round(value / alone, 3) for name, value in medians.items()},
        "loadavg": _env.load_average(),
        "machine": _env.machine(),
    }
    _env.emit(summary, args.out)


if __name__ == "__main__":
    main()
