"""P2, a new experiment's first trial: from the master launching it to its first training
batch when it needs a new warm worker (the slot's idle worker is another experiment's), with
the worker template (the worker forked in milliseconds) and without it (a process of its own
that imports the framework); and the memory of the spares (the default: 2).

    .venv/bin/python bench/p2_new_experiment.py [--experiments 6] [--rounds 3] [--out F.jsonl]

Per round and variant (``PEDL_WORKER_TEMPLATE`` 1, then 0, alternating, so the machine's load
falls on both alike): a master (separate process, SQLite, 2 CPU slots, 2 spare workers) starts;
once its spares are idle, the proportional set size (PSS, ``/proc/<pid>/smaps_rollup``) of the
master's children (the template and the spares, or the spares; not its read process) is read;
then ``--experiments`` experiments of one trial of ``bench/p2_model`` (2 batches, a
validation, a checkpoint) run one after another. The first two trials run in the spares; each
later one needs a new worker (the longest idle worker, another experiment's, makes room). Per trial,
``bench/p2_first_batch.py``'s timing (launch to first batch, through ``bench/p2_site``), its
experiment's creation to completion, and the trial log's line saying where it ran. Prints one
JSON line per trial and per master, then each variant's medians over the new-worker trials,
with the load average and the machine (``bench/_env.py``).
"""

from __future__ import annotations

import argparse
import base64
import json
import os
import statistics
import tempfile
import time
from datetime import datetime
from pathlib import Path
from typing import Any

import _env
import httpx
import p5_master
import psutil
from p2_first_batch import MODEL_DIR, SITE_DIR, analyse, launch_time

from pedl import model_def

CONFIG = """
name: p2-new-experiment
entrypoint: model_def:TinyTrial
hyperparameters: {global_batch_size: 16, lr: 0.01}
searcher: {name: single, metric: val_accuracy, smaller_is_better: false, max_length: {batches: 2}}
scheduling_unit: 2
"""
WHERE = "[master] the trial runs in "
SPARES = 2


def settled_pss_mb(pid: int) -> float:
    """The proportional set size (MB) of ``pid``'s children but its read process, once they
    have stopped working (less than 0.05 s of CPU in a second: their imports are done)."""
    while True:
        children = [
            c
            for c in psutil.Process(pid).children(recursive=True)
            if "pedl.master" not in " ".join(c.cmdline())
        ]
        before = sum(sum(c.cpu_times()[:2]) for c in children)
        time.sleep(1.0)
        if sum(sum(c.cpu_times()[:2]) for c in children) - before < 0.05:
            break
    total = 0
    for child in children:
        for line in Path(f"/proc/{child.pid}/smaps_rollup").read_text().splitlines():
            if line.startswith("Pss:"):
                total += int(line.split()[1])
    return round(total / 1024, 1)


def idle_spares(http: httpx.Client, timeout: float) -> None:
    deadline = time.monotonic() + timeout
    while len(http.get("/cluster").json()["idle_workers"]) < SPARES:
        if time.monotonic() > deadline:
            raise RuntimeError("no idle spare")
        time.sleep(0.2)


def run_trial(http: httpx.Client, out_dir: Path, timeout: float) -> dict[str, Any]:
    archive = base64.b64encode(model_def.package(MODEL_DIR)).decode()
    created = time.time()
    response = http.post("/experiments", json={"config": CONFIG, "model_definition": archive})
    response.raise_for_status()
    experiment_id = response.json()["id"]
    deadline = time.monotonic() + timeout
    while (state := http.get(f"/experiments/{experiment_id}").json()["state"]) not in (
        "COMPLETED",
        "CANCELED",
        "ERROR",
    ):
        if time.monotonic() > deadline:
            raise RuntimeError(f"experiment {experiment_id} still {state}")
        time.sleep(0.05)
    completed = time.time()
    if state != "COMPLETED":
        raise RuntimeError(f"experiment {experiment_id} ended {state}")
    (trial,) = http.get(f"/experiments/{experiment_id}/trials").json()["items"]
    lines = http.get(f"/trials/{trial['id']}/logs", params={"limit": 10000}).json()
    where = next(line["message"] for line in lines if line["message"].startswith(WHERE))
    times = json.loads((out_dir / f"{trial['id']}.json").read_text())
    timing = analyse(
        trial["id"],
        launch_time(http, trial["id"]),
        datetime.fromisoformat(trial["ended_at"]).timestamp(),
        times,
    )
    return {
        "where": "forked"
        if "forked from the warm worker template" in where
        else "spare"
        if "spare" in where
        else "own process",
        "launch_to_first_batch_s": timing["launch_to_first_batch_s"],
        "created_to_completed_s": round(completed - created, 3),
    }


def one_master(template: bool, experiments: int, timeout: float) -> list[dict[str, Any]]:
    rows: list[dict[str, Any]] = []
    with tempfile.TemporaryDirectory(prefix="pedl-p2n-") as tmp:
        home = Path(tmp)
        out_dir = home / "times"
        out_dir.mkdir()
        os.environ.update(
            {
                "PEDL_SPARE_WORKERS": str(SPARES),
                "PEDL_WORKER_TEMPLATE": "1" if template else "0",
                "PYTHONPATH": str(SITE_DIR),
                "PEDL_P2_OUT": str(out_dir),
            }
        )
        backend = p5_master.make_backend("sqlite", home)
        master = p5_master.MasterProcess(home, backend.url, cpu_slots=SPARES)
        master.start()
        try:
            with master.client() as http:
                idle_spares(http, timeout)
                assert master.proc is not None
                memory = {
                    "variant": _name(template),
                    "spares_pss_mb": settled_pss_mb(master.proc.pid),
                }
                print(json.dumps(memory), flush=True)
                rows.append(memory)
                for index in range(experiments):
                    load = _env.load_average()[0]
                    row = {"variant": _name(template), "experiment": index, "loadavg_1m": load}
                    row.update(run_trial(http, out_dir, timeout))
                    print(json.dumps(row), flush=True)
                    rows.append(row)
        finally:
            master.stop()
    return rows


def _name(template: bool) -> str:
    return "template" if template else "own process"


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--experiments", type=int, default=6)
    parser.add_argument("--rounds", type=int, default=3)
    parser.add_argument("--timeout", type=float, default=300.0)
    parser.add_argument("--out", type=Path)
    args = parser.parse_args()
    machine = _env.machine()
    rows: list[dict[str, Any]] = []
    load = [_env.load_average()[0]]
    for _ in range(args.rounds):
        for template in (True, False):
            rows += one_master(template, args.experiments, args.timeout)
    load.append(_env.load_average()[0])
    summary: dict[str, Any] = {"summary": "p2_new_experiment", "loadavg_1m": load, **machine}
    for template in (True, False):
        mine = [r for r in rows if r["variant"] == _name(template)]
        new = [r for r in mine if r.get("experiment", 0) >= SPARES]
        summary[_name(template)] = {
            "new_worker_trials": len(new),
            "launch_to_first_batch_s": statistics.median(r["launch_to_first_batch_s"] for r in new),
            "created_to_completed_s": statistics.median(r["created_to_completed_s"] for r in new),
            "spares_pss_mb": statistics.median(
                r["spares_pss_mb"] for r in mine if "spares_pss_mb" in r
            ),
            "where": sorted({r["where"] for r in new}),
        }
    print(json.dumps(summary, indent=1), flush=True)
    if args.out:
        with args.out.open("a") as out:
            for line in [*rows, summary]:
                out.write(json.dumps(line) + "\n")


if __name__ == "__main__":
    main()
