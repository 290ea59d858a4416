"""P2: from the master launching a trial process to its first training batch, beyond the import
of TensorFlow.

    .venv/bin/python bench/p2_first_batch.py [--trials 12] [--out FILE.jsonl]

A master runs as a separate process on loopback (SQLite, one CPU slot, so trial processes run
one after another, each fresh). One random-search experiment of ``--trials`` trials of the tiny
model in ``bench/p2_model`` (2 Dense layers on 96 arrays rows, 2 batches) runs to completion.
Timestamps (``time.time()``, one clock):

- launch: the orchestrator's trial log line "starting the trial process", written just
  before the local resource manager's ``Popen``;
- in the trial process, ``bench/p2_site/sitecustomize.py`` (via ``PYTHONPATH`` in the config's
  environment variables) records when the interpreter is ready and when the bodies of
  ``pedl``, ``pedl.exec``, ``keras``, ``tensorflow``, ``pedl.keras`` start and end executing;
  the model definition records its module import, ``build_model``, data loaders,
  ``on_train_begin`` and the first ``on_train_batch_begin``/``_end``.

The result per trial: launch to first batch begin, minus the TensorFlow import (the span of
``tensorflow``'s body, nested inside ``import keras``), with the remainder broken down in
phases. The framework import (keras + tensorflow) is reported too. Prints one JSON line per
trial and a summary (median, quartiles, min, max over trials).
"""

from __future__ import annotations

import argparse
import base64
import json
import statistics
import tempfile
import time
from datetime import datetime
from pathlib import Path
from typing import Any

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
environment:
  environment_variables: ["PYTHONPATH={site}", "PEDL_P2_OUT={out}"]
"""

# (phase name, start event, end event): consecutive spans from launch to the first batch.
PHASES = [
    ("process+python start", "launch", "python_ready"),
    ("pedl imports (pedl.exec)", "python_ready", "pedl.exec:end"),
    ("start info + model def fetch/extract/load", "pedl.exec:end", "model_module:start"),
    ("import keras (incl. tensorflow)", "model_module:start", "keras:end"),
    ("import pedl.keras + rest of model module", "keras:end", "model_module:end"),
    ("context + controller until build_model", "model_module:end", "build_model:start"),
    ("build_model (incl. compile)", "build_model:start", "build_model:end"),
    ("after build_model until fit on_train_begin", "build_model:end", "fit:on_train_begin"),
    ("fit start until first batch begin", "fit:on_train_begin", "first_batch:begin"),
]


def launch_time(http: httpx.Client, trial_id: int) -> float:
    response = http.get(f"/trials/{trial_id}/logs", params={"limit": 10000})
    response.raise_for_status()
    for line in response.json():
        if line["message"].startswith(LAUNCH_LINE):
            return datetime.fromisoformat(line["timestamp"]).timestamp()
    raise RuntimeError(f"trial {trial_id}: no launch line in its logs")


def analyse(trial_id: int, launch: float, times: dict[str, float]) -> dict[str, Any]:
    events = {"launch": launch, **times}
    phases = {name: round(events[end] - events[start], 3) for name, start, end in PHASES}
    total = events["first_batch:begin"] - launch
    tf_import = events["tensorflow:end"] - events["tensorflow:start"]
    framework = events["keras:end"] - events["keras:start"]
    return {
        "trial_id": trial_id,
        "launch_to_first_batch_s": round(total, 3),
        "tensorflow_import_s": round(tf_import, 3),
        "keras_tensorflow_import_s": round(framework, 3),
        "beyond_tf_import_s": round(total - tf_import, 3),
        "beyond_keras_tf_import_s": round(total - framework, 3),
        "first_step_s": round(events["first_batch:end"] - events["first_batch:begin"], 3),
        "phases_s": phases,
        "data_loaders_s": round(
            events["train_data:end"]
            - events["train_data:start"]
            + events["validation_data:end"]
            - events["validation_data:start"],
            4,
        ),
        "pedl_keras_import_s": round(events["pedl.keras:end"] - events["pedl.keras:start"], 3),
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
    parser.add_argument("--timeout", type=float, default=540.0, help="give up after (s)")
    parser.add_argument("--out", type=Path)
    args = parser.parse_args()

    results: list[dict[str, Any]] = []
    with tempfile.TemporaryDirectory(prefix="pedl-p2-") as tmp:
        home = Path(tmp)
        out_dir = home / "times"
        out_dir.mkdir()
        backend = p5_master.make_backend("sqlite", home)
        master = p5_master.MasterProcess(home, backend.url)
        load = [p5_master.loadavg()]
        try:
            master.start()
            with httpx.Client(base_url=master.url + "/api/v1", timeout=30) as http:
                config = CONFIG.format(trials=args.trials, site=SITE_DIR, out=out_dir)
                archive = base64.b64encode(model_def.package(MODEL_DIR)).decode()
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
                    time.sleep(0.5)
                load.append(p5_master.loadavg())
                response = http.get(f"/experiments/{experiment_id}/trials", params={"limit": 1000})
                response.raise_for_status()
                for trial in response.json()["items"]:
                    path = out_dir / f"{trial['id']}.json"
                    if not path.exists():
                        print(f"trial {trial['id']} ({trial['state']}) wrote no times")
                        continue
                    result = analyse(
                        trial["id"], launch_time(http, trial["id"]), json.loads(path.read_text())
                    )
                    print(json.dumps(result), flush=True)
                    results.append(result)
            if state != "COMPLETED":
                raise RuntimeError(f"experiment {experiment_id} ended {state}")
        finally:
            master.stop()

    summary: dict[str, Any] = {"summary": "p2", "n": len(results), "loadavg_1m": load}
    for key in (
        "launch_to_first_batch_s",
        "tensorflow_import_s",
        "keras_tensorflow_import_s",
        "beyond_tf_import_s",
        "beyond_keras_tf_import_s",
        "first_step_s",
        "pedl_keras_import_s",
        "data_loaders_s",
    ):
        summary[key] = spread([r[key] for r in results])
    summary["phases_s"] = {
        name: spread([r["phases_s"][name] for r in results]) for name, _, _ in PHASES
    }
    print(json.dumps(summary, indent=1), flush=True)
    if args.out:
        with args.out.open("a") as out:
            for line in [*results, summary]:
                out.write(json.dumps(line) + "\n")


if __name__ == "__main__":
    main()
