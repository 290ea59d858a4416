"""P4: adaptive ASHA against random search on the same 27 configurations of digits.

For each seed, one ``adaptive_asha`` and one ``random`` experiment with the same space, the
same experiment seed (so the same 27 hyperparameter draws, checked) and the same maximum
length run one after the other (the order alternates by seed) on one real master with 2
slots. Per pair: wall time of each search (created → ended, from the master's record), epochs
trained (sum over trials of batches ÷ batches per epoch), best validation accuracy, and
ASHA ÷ random, and how far ASHA trained random search's best configuration and what it
reached there, with the load average before and after each search. One JSON line per pair
goes to ``--out``; a summary is printed with the load averages seen and the machine
(``bench/_env.py``). Seeds are a fixed count (``--seeds``), not repeated until an interval is
narrow: the goal is per seed.

ASHA's settings default to ``mode: aggressive``, ``divisor: 3``, ``max_rungs: 4`` (rungs at 1,
3, 9 and 27 epochs), promotions; ``--mode``, ``--divisor``, ``--max-rungs`` and ``--stop-once``
change them. ``--stop-once --divisor 4 --max-rungs 3`` comes closest to Ray Tune's
``ASHAScheduler``: a trial goes on at a rung while it is in the top quarter so far; rungs at
27/16, 27/4 and 27 epochs.

Run from ``bench/``: ``../.venv/bin/python p4_asha.py --seeds 8``.
"""

from __future__ import annotations

import argparse
import base64
import json
import math
import statistics
import subprocess
import sys
import tempfile
import time
from datetime import datetime
from pathlib import Path
from typing import Any

import _env
import httpx
from p5_master import MasterProcess

from pedl import model_def

EXAMPLE = Path(__file__).resolve().parents[1] / "examples" / "digits_keras"
RECORDS_PER_EPOCH = 1438

SPACE = """
hyperparameters:
  global_batch_size: {type: categorical, vals: [16, 32, 64]}
  learning_rate: {type: log, base: 10, minval: -5.0, maxval: 0.0}
  conv_filters: 16
  dense_units: {type: int, minval: 16, maxval: 128}
  dropout: {type: double, minval: 0.0, maxval: 0.5}
"""

ASHA = """
searcher:
  name: adaptive_asha
  metric: val_accuracy
  smaller_is_better: false
  max_length: {{epochs: {epochs}}}
  max_trials: 27
  divisor: {divisor}
  max_rungs: {max_rungs}
  mode: {mode}
  stop_once: {stop_once}
  max_concurrent_trials: 2
"""

RANDOM = """
searcher:
  name: random
  metric: val_accuracy
  smaller_is_better: false
  max_length: {{epochs: {epochs}}}
  max_trials: 27
  max_concurrent_trials: 2
"""

COMMON = """
name: p4-{kind}-{seed}
data: {{validation_fraction: 0.2}}
records_per_epoch: 1438
reproducibility: {{experiment_seed: {seed}}}
"""


ASHA_DEFAULTS = {"mode": "aggressive", "divisor": 3, "max_rungs": 4, "stop_once": False}
"""The ASHA settings measured unless the command line says otherwise."""


def config(kind: str, seed: int, epochs: int, asha: dict[str, Any]) -> str:
    settings = {**asha, "stop_once": str(asha["stop_once"]).lower()}
    searcher = (ASHA if kind == "asha" else RANDOM).format(epochs=epochs, **settings)
    return COMMON.format(kind=kind, seed=seed) + SPACE + searcher


def run_experiment(http: httpx.Client, config_yaml: str, archive: str) -> dict[str, Any]:
    """Create the experiment, wait until it ends, and return it; raise unless it COMPLETED."""
    body = {"config": config_yaml, "model_definition": archive}
    response = http.post("/experiments", json=body)
    response.raise_for_status()
    experiment_id = response.json()["id"]
    while (experiment := http.get(f"/experiments/{experiment_id}").json())["state"] not in (
        "COMPLETED",
        "CANCELED",
        "ERROR",
    ):
        time.sleep(0.5)
    if experiment["state"] != "COMPLETED":
        raise RuntimeError(
            f"experiment {experiment_id} ({experiment['name']}) ended {experiment['state']}: "
            f"{experiment['error']}"
        )
    return dict(experiment)


def run_search(
    http: httpx.Client, archive: str, kind: str, seed: int, epochs: int, asha: dict[str, Any]
) -> dict[str, Any]:
    load = _env.Load.start()
    experiment = run_experiment(http, config(kind, seed, epochs, asha), archive)
    load.stop()
    experiment_id = experiment["id"]
    trials = http.get(f"/experiments/{experiment_id}/trials", params={"limit": 1000}).json()
    created = datetime.fromisoformat(experiment["created_at"])
    ended = datetime.fromisoformat(experiment["ended_at"])
    epochs_trained = sum(
        t["total_batches"] / math.ceil(RECORDS_PER_EPOCH / t["hparams"]["global_batch_size"])
        for t in trials["items"]
    )
    return {
        "experiment_id": experiment_id,
        "wall_s": (ended - created).total_seconds(),
        "epochs_trained": epochs_trained,
        "best_val_accuracy": experiment["best_validation"],
        "trials": len(trials["items"]),
        **load.as_dict(),
        "per_trial": {
            json.dumps(t["hparams"], sort_keys=True): {
                "batches": t["total_batches"],
                "best_val_accuracy": t["best_validation"],
            }
            for t in trials["items"]
        },
    }


def without_per_trial(search: dict[str, Any]) -> dict[str, Any]:
    return {k: v for k, v in search.items() if k != "per_trial"}


def ratios(asha: dict[str, Any], full: dict[str, Any]) -> dict[str, Any]:
    """ASHA's search against the full search of the same configurations: wall time, epochs,
    and whether its best validation accuracy matches (or, as ASHA validates at every rung and
    can see a configuration's peak, is at least) the full search's."""
    return {
        "wall_ratio": asha["wall_s"] / full["wall_s"],
        "epochs_ratio": asha["epochs_trained"] / full["epochs_trained"],
        "best_matches": math.isclose(
            asha["best_val_accuracy"], full["best_val_accuracy"], abs_tol=1e-9
        ),
        "best_at_least_random": asha["best_val_accuracy"] >= full["best_val_accuracy"] - 1e-9,
    }


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--seeds", type=int, default=8)
    parser.add_argument("--first-seed", type=int, default=1)
    parser.add_argument("--epochs", type=int, default=27, help="max_length in epochs")
    parser.add_argument("--slots", type=int, default=2)
    parser.add_argument(
        "--mode", choices=["aggressive", "standard", "conservative"], default=ASHA_DEFAULTS["mode"]
    )
    parser.add_argument("--divisor", type=int, default=ASHA_DEFAULTS["divisor"])
    parser.add_argument("--max-rungs", type=int, default=ASHA_DEFAULTS["max_rungs"])
    parser.add_argument("--stop-once", action="store_true", help="the stop-only variant")
    parser.add_argument("--out", type=Path, default=Path("results/p4.jsonl"))
    args = parser.parse_args()
    args.out.parent.mkdir(parents=True, exist_ok=True)
    archive = base64.b64encode(model_def.package(EXAMPLE)).decode()
    commit = subprocess.run(
        ["git", "rev-parse", "--short", "HEAD"], capture_output=True, text=True, check=False
    ).stdout.strip()
    asha_settings = {
        "mode": args.mode,
        "divisor": args.divisor,
        "max_rungs": args.max_rungs,
        "stop_once": args.stop_once,
    }
    pairs = []
    with tempfile.TemporaryDirectory(prefix="pedl-p4-") as home:
        db = f"sqlite:///{Path(home) / 'master.db'}"
        master = MasterProcess(Path(home), db, cpu_slots=args.slots).start()
        try:
            http = master.client(timeout=60)
            for seed in range(args.first_seed, args.first_seed + args.seeds):
                order = ["asha", "random"] if seed % 2 else ["random", "asha"]
                result = {
                    kind: run_search(http, archive, kind, seed, args.epochs, asha_settings)
                    for kind in order
                }
                asha, rand = result["asha"], result["random"]
                pair = {
                    "seed": seed,
                    "asha_settings": asha_settings,
                    "order": order,
                    "same_configurations": asha["per_trial"].keys() <= rand["per_trial"].keys(),
                    **ratios(asha, rand),
                    # random's best configuration: how far ASHA trained it, and what it reached
                    "random_best_in_asha": asha["per_trial"].get(
                        max(rand["per_trial"].items(), key=lambda kv: kv[1]["best_val_accuracy"])[0]
                    ),
                    "asha": without_per_trial(asha),
                    "random": without_per_trial(rand),
                    "commit": commit,
                    "utc": datetime.utcnow().isoformat(timespec="seconds"),
                }
                pairs.append(pair)
                with args.out.open("a") as f:
                    f.write(json.dumps(pair) + "\n")
                print(json.dumps(pair), flush=True)
        finally:
            master.stop()
    walls = [p["wall_ratio"] for p in pairs]
    summary = {
        "pairs": len(pairs),
        "wall_ratio_median": statistics.median(walls),
        "wall_ratio_mean": statistics.fmean(walls),
        "wall_ratio_max": max(walls),
        "epochs_ratio_median": statistics.median(p["epochs_ratio"] for p in pairs),
        "best_matches": sum(p["best_matches"] for p in pairs),
        "best_at_least_random": sum(p["best_at_least_random"] for p in pairs),
        "same_configurations": all(p["same_configurations"] for p in pairs),
        "loadavg_1m_range": _env.load_range(
            [p[kind] for p in pairs for kind in ("asha", "random")]
        ),
        "machine": _env.machine(),
        "argv": sys.argv[1:],
    }
    print(json.dumps(summary, indent=2))


if __name__ == "__main__":
    main()
