"""P2: from the master launching a trial to its first training batch, beyond the import of
TensorFlow; and trivial trials completed per second.

    .venv/bin/python bench/p2_first_batch.py [--trials 12] [--slots 1] [--out FILE.jsonl]

A master runs as a separate process on loopback (SQLite, ``--slots`` CPU slots; set
``PEDL_WORKER_REUSE=0`` in the environment to run every trial in a fresh process), with
``--spare-workers`` spare warm workers (default 0); ``--settle`` waits that many seconds after
the master started before the experiment is created (its spares have imported TensorFlow by
then, as on a master that has been up a while). With spares, the probe's variables are the
master's (trials inherit them) rather than the experiment's: a spare serves only experiments
without environment variables. One
random-search experiment of ``--trials`` trials of the tiny model in ``bench/p2_model`` (2 Dense
layers on 96 arrays rows, 2 batches, a validation and a checkpoint) runs to completion.
Timestamps (``time.time()``, one clock):

- launch: the orchestrator's trial log line "starting the trial process", written just after
  the trial is placed and just before the resource manager starts (or hands the trial to) its
  process;
- in the trial's process, ``bench/p2_site/sitecustomize.py`` (via ``PYTHONPATH`` in the
  config's environment variables, or the master's) records when the interpreter is ready and
  when the bodies of ``pedl``, ``pedl.exec``, ``keras``, ``tensorflow``, ``pedl.keras`` start
  and end executing; the model definition records its module import, ``build_model``, data
  loaders, ``on_train_begin`` and the first ``on_train_batch_begin``/``_end``.

Per trial: launch to first batch begin; the framework import paid by this trial (``import
keras``, which includes TensorFlow's, when it happened after the launch; 0 in a process that
had imported it before: a warm worker); the difference ("beyond the framework import"); whether
the process was started for this trial ("cold") or was already running ("warm"); and the
consecutive spans between the recorded events after the launch. Throughput: trials divided by
the time from creating the experiment to the last trial's end, and in the steady state (after
the first ``--slots`` trials ended); and per trial, launch to its end. The CPU time of the
master and all its trial processes (start-up included) says what the run would cost on an idle
machine. Prints one JSON line per trial and a summary.
"""

from __future__ import annotations

import argparse
import base64
import itertools
import json
import os
import resource
import statistics
import tempfile
import time
from datetime import datetime
from pathlib import Path
from typing import Any

import _env
import httpx
import p5_master

from pedl import model_def

BENCH = Path(__file__).resolve().parent
MODEL_DIR = BENCH / "p2_model"
SITE_DIR = BENCH / "p2_site"
LAUNCH_LINE = "[master] starting the trial process"

CONFIG = """
name: p2-first-batch
entrypoint: model_def:TinyTrial
hyperparameters:
  global_batch_size: 16
  lr: {{type: double, minval: 0.001, maxval: 0.1}}
searcher:
  name: random
  metric: val_accuracy
  smaller_is_better: false
  max_trials: {trials}
  max_length: {{batches: 2}}
scheduling_unit: 2
"""
ENVIRONMENT = """environment:
  environment_variables: ["PYTHONPATH={site}", "PEDL_P2_OUT={out}"]
"""

# The events between the launch and the first batch; a trial's spans are the gaps between those
# of them that happened after its launch, in time order.
EVENTS = [
    "launch",
    "python_ready",
    "pedl.exec:end",
    "model_module:start",
    "keras:start",
    "keras:end",
    "model_module:end",
    "build_model:start",
    "build_model:end",
    "fit:on_train_begin",
    "first_batch:begin",
]


def launch_time(http: httpx.Client, trial_id: int) -> float:
    response = http.get(f"/trials/{trial_id}/logs", params={"limit": 10000})
    response.raise_for_status()
    for line in response.json():
        if line["message"].startswith(LAUNCH_LINE):
            return datetime.fromisoformat(line["timestamp"]).timestamp()
    raise RuntimeError(f"trial {trial_id}: no launch line in its logs")


def analyse(trial_id: int, launch: float, ended: float, times: dict[str, float]) -> dict[str, Any]:
    events = {"launch": launch, **times}
    total = events["first_batch:begin"] - launch
    cold = events["python_ready"] >= launch
    # The framework import this trial waited for: none in a process that had done it before.
    framework = (
        events["keras:end"] - events["keras:start"] if events["keras:start"] >= launch else 0
    )
    tf_body = (
        events["tensorflow:end"] - events["tensorflow:start"]
        if events["tensorflow:start"] >= launch
        else 0
    )
    after = sorted((e for e in EVENTS if events[e] >= launch), key=lambda e: events[e])
    spans = {f"{a} -> {b}": round(events[b] - events[a], 3) for a, b in itertools.pairwise(after)}
    return {
        "trial_id": trial_id,
        "process": "cold" if cold else "warm",
        "launch_to_first_batch_s": round(total, 3),
        "framework_import_s": round(framework, 3),
        "tensorflow_body_s": round(tf_body, 3),
        "beyond_framework_import_s": round(total - framework, 3),
        "first_step_s": round(events["first_batch:end"] - events["first_batch:begin"], 3),
        "launch_to_end_s": round(ended - launch, 3),
        "spans_s": spans,
    }


def throughput(created: float, ended: list[float], slots: int) -> dict[str, float | int | None]:
    """Trials per second from the experiment's creation to the last end, and after the first
    ``slots`` trials ended (the steady state, start-up excluded)."""
    ends = sorted(ended)
    n = len(ends)
    steady = (n - slots) / (ends[-1] - ends[slots - 1]) if n > slots else None
    return {
        "n": n,
        "wall_s": round(ends[-1] - created, 3),
        "trials_per_s": round(n / (ends[-1] - created), 3),
        "steady_trials_per_s": None if steady is None else round(steady, 3),
    }


def spread(values: list[float]) -> dict[str, float]:
    q1, _, q3 = statistics.quantiles(values, n=4) if len(values) > 1 else (values * 3)
    return {
        "median": round(statistics.median(values), 3),
        "q1": round(q1, 3),
        "q3": round(q3, 3),
        "min": round(min(values), 3),
        "max": round(max(values), 3),
    }


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--trials", type=int, default=12)
    parser.add_argument("--slots", type=int, default=1, help="the master's CPU slots")
    parser.add_argument("--timeout", type=float, default=540.0, help="give up after (s)")
    parser.add_argument("--spare-workers", type=int, default=0, help="the master's spares")
    parser.add_argument("--settle", type=float, default=0.0, help="s between start and create")
    parser.add_argument("--out", type=Path)
    args = parser.parse_args()

    results: list[dict[str, Any]] = []
    with tempfile.TemporaryDirectory(prefix="pedl-p2-") as tmp:
        home = Path(tmp)
        out_dir = home / "times"
        out_dir.mkdir()
        backend = p5_master.make_backend("sqlite", home)
        master = p5_master.MasterProcess(home, backend.url, cpu_slots=args.slots)
        os.environ["PEDL_SPARE_WORKERS"] = str(args.spare_workers)
        config = CONFIG.format(trials=args.trials)
        if args.spare_workers:
            os.environ["PYTHONPATH"] = str(SITE_DIR)
            os.environ["PEDL_P2_OUT"] = str(out_dir)
        else:
            config += ENVIRONMENT.format(site=SITE_DIR, out=out_dir)
        load = [_env.load_average()[0]]
        before = resource.getrusage(resource.RUSAGE_CHILDREN)
        try:
            master.start()
            time.sleep(args.settle)
            with master.client() as http:
                archive = base64.b64encode(model_def.package(MODEL_DIR)).decode()
                created = time.time()
                response = http.post(
                    "/experiments", json={"config": config, "model_definition": archive}
                )
                response.raise_for_status()
                experiment_id = response.json()["id"]
                deadline = time.monotonic() + args.timeout
                while True:
                    state = http.get(f"/experiments/{experiment_id}").json()["state"]
                    if state in ("COMPLETED", "CANCELED", "ERROR"):
                        break
                    if time.monotonic() > deadline:
                        raise RuntimeError(f"experiment still {state} after {args.timeout} s")
                    time.sleep(0.1)
                load.append(_env.load_average()[0])
                response = http.get(f"/experiments/{experiment_id}/trials", params={"limit": 1000})
                response.raise_for_status()
                trials = response.json()["items"]
                ended = [datetime.fromisoformat(t["ended_at"]).timestamp() for t in trials]
                rate = throughput(created, ended, args.slots)
                for trial in trials:
                    path = out_dir / f"{trial['id']}.json"
                    if not path.exists():
                        print(f"trial {trial['id']} ({trial['state']}) wrote no times")
                        continue
                    result = analyse(
                        trial["id"],
                        launch_time(http, trial["id"]),
                        datetime.fromisoformat(trial["ended_at"]).timestamp(),
                        json.loads(path.read_text()),
                    )
                    print(json.dumps(result), flush=True)
                    results.append(result)
            if state != "COMPLETED":
                raise RuntimeError(f"experiment {experiment_id} ended {state}")
        finally:
            master.stop()
        after = resource.getrusage(resource.RUSAGE_CHILDREN)
        cpu = after.ru_utime + after.ru_stime - before.ru_utime - before.ru_stime

    summary: dict[str, Any] = {
        "summary": "p2",
        "slots": args.slots,
        "worker_reuse": os.environ.get("PEDL_WORKER_REUSE", "default"),
        "spare_workers": args.spare_workers,
        "settle_s": args.settle,
        "loadavg_1m": load,
        "throughput": rate,
        # the master and every trial process (reaped by the master before it exits)
        "cpu_s": round(cpu, 2),
        "cpu_s_per_trial": round(cpu / max(1, len(results)), 3),
    }
    for kind in ("cold", "warm"):
        chosen = [r for r in results if r["process"] == kind]
        if not chosen:
            continue
        part: dict[str, Any] = {"n": len(chosen)}
        for key in (
            "launch_to_first_batch_s",
            "framework_import_s",
            "tensorflow_body_s",
            "beyond_framework_import_s",
            "first_step_s",
            "launch_to_end_s",
        ):
            part[key] = spread([r[key] for r in chosen])
        names = list(dict.fromkeys(name for r in chosen for name in r["spans_s"]))
        part["spans_s"] = {
            name: spread([r["spans_s"][name] for r in chosen if name in r["spans_s"]])
            for name in names
        }
        summary[kind] = part
    print(json.dumps(summary, indent=1), flush=True)
    if args.out:
        with args.out.open("a") as out:
            for line in [*results, summary]:
                out.write(json.dumps(line) + "\n")


if __name__ == "__main__":
    main()
