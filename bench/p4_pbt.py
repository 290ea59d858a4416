"""PBT against random search on digits at the same training budget (issue 37).

For each seed, ``examples/digits_keras/pbt.yaml`` (6 trials x 3 rounds x 2 epochs = 36 epochs
of training) and ``examples/digits_keras/random.yaml`` (6 trials x 6 epochs = 36 epochs) over
pbt.yaml's space (the learning rate and the dropout rate; the layer sizes fixed, as a copy
must have its parent's layers) run one after the other (the order alternates by seed) on one
real master with 2 slots, both with ``reproducibility.experiment_seed`` set to the seed. Both
validate every 2 epochs. Per pair: the best validation accuracy of each search (the master's
``best_validation`` of the experiment, over every validation of every trial), the epochs each
trained (sum over trials of the trial's own batches / batches per epoch: a PBT copy's counters
start at 0 from its parent's weights; checked equal to the 36 planned), how many trials
errored, whether PBT's first population drew random search's six configurations (the same
seed) and whether PBT's best trial is a copy, wall time (created -> ended, from the master's
record) and PBT / random. One JSON line per pair goes to ``--out``; a summary (in how many
seeds PBT's best >= random's, the median difference) is printed.

``--variant`` changes the searches, each still at 36 epochs:

- ``architecture``: both over random.yaml's space, where the layer sizes (``conv_filters``,
  ``dense_units``) are searched too, as pbt.yaml was until this benchmark: a copy whose
  explored ``dense_units`` differs from its parent's cannot load its parent's weights and
  errors before training (PBT counts it as the worst), so PBT trains fewer epochs.
- ``pop12``: PBT with 12 trials x 3 rounds x 1 epoch (a larger population, shorter rounds),
  checkpoints every epoch; random search as by default.

``--repeat-seed N`` runs seed N once more at the end (search quality should not depend on
the machine's load: PEDL trains with op determinism).

Run from ``bench/``: ``../.venv/bin/python p4_pbt.py --seeds 6``.
"""

from __future__ import annotations

import argparse
import base64
import json
import math
import os
import platform
import statistics
import subprocess
import sys
import tempfile
from datetime import datetime
from pathlib import Path
from typing import Any

import httpx
import yaml
from p4_asha import run_experiment
from p5_master import MasterProcess

from pedl import model_def

EXAMPLE = Path(__file__).resolve().parents[1] / "examples" / "digits_keras"
BUDGET_EPOCHS = 36

PBT_VARIANTS: dict[str, dict[str, Any]] = {
    "example": {},
    "architecture": {},
    # a population twice as large, rounds half as long: still 12 x 3 x 1 = 36 epochs
    "pop12": {"population_size": 12, "num_rounds": 3, "length_per_round": {"epochs": 1}},
}


def example(kind: str) -> dict[str, Any]:
    raw: dict[str, Any] = yaml.safe_load((EXAMPLE / f"{kind}.yaml").read_text())
    return raw


def config(kind: str, seed: int, variant: str) -> dict[str, Any]:
    """The experiment's configuration: the example's, with the seed and name set and the
    space of the variant (pbt.yaml's, or random.yaml's for ``architecture``)."""
    raw = example(kind)
    raw["name"] = f"p4-pbt-{kind}-{seed}-{variant}"
    raw["reproducibility"] = {"experiment_seed": seed}
    space_of = "random" if variant == "architecture" else "pbt"
    raw["hyperparameters"] = example(space_of)["hyperparameters"]
    if kind == "pbt" and variant == "pop12":
        raw["searcher"].update(PBT_VARIANTS[variant])
        raw["min_checkpoint_period"] = raw["searcher"]["length_per_round"]
    return raw


def planned_epochs(raw: dict[str, Any]) -> int:
    """The search's training budget in epochs, from its configuration."""
    searcher = raw["searcher"]
    if searcher["name"] == "pbt":
        return int(
            searcher["population_size"]
            * searcher["num_rounds"]
            * searcher["length_per_round"]["epochs"]
        )
    return int(searcher["max_trials"] * searcher["max_length"]["epochs"])


def run_search(
    http: httpx.Client, archive: str, kind: str, seed: int, variant: str
) -> dict[str, Any]:
    raw = config(kind, seed, variant)
    experiment = run_experiment(http, yaml.safe_dump(raw, sort_keys=False), archive)
    experiment_id = experiment["id"]
    trials = http.get(f"/experiments/{experiment_id}/trials", params={"limit": 1000}).json()
    items = sorted(trials["items"], key=lambda t: t["id"])
    created = datetime.fromisoformat(experiment["created_at"])
    ended = datetime.fromisoformat(experiment["ended_at"])
    records_per_epoch = int(raw["records_per_epoch"])
    epochs_trained = sum(
        t["total_batches"] / math.ceil(records_per_epoch / t["hparams"]["global_batch_size"])
        for t in items
    )
    return {
        "experiment_id": experiment_id,
        "wall_s": (ended - created).total_seconds(),
        "epochs_trained": epochs_trained,
        "epochs_planned": planned_epochs(raw),
        "best_val_accuracy": experiment["best_validation"],
        "trials": len(items),
        "errored": sum(t["state"] == "ERROR" for t in items),
        "space": raw["hyperparameters"],
        "per_trial": [
            {
                "id": t["id"],
                "hparams": t["hparams"],
                "batches": t["total_batches"],
                "best_val_accuracy": t["best_validation"],
                "state": t["state"],
                "error": (t.get("error") or {}).get("message"),
                "parent_trial_id": t.get("parent_trial_id"),
                "parent_batches": t.get("parent_batches"),
            }
            for t in items
        ],
    }


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--seeds", type=int, default=6)
    parser.add_argument("--first-seed", type=int, default=1)
    parser.add_argument("--repeat-seed", type=int, default=None)
    parser.add_argument("--variant", choices=sorted(PBT_VARIANTS), default="example")
    parser.add_argument("--slots", type=int, default=2)
    parser.add_argument("--out", type=Path, default=Path("results/p4_pbt.jsonl"))
    args = parser.parse_args()
    args.out.parent.mkdir(parents=True, exist_ok=True)
    archive = base64.b64encode(model_def.package(EXAMPLE)).decode()
    commit = subprocess.run(
        ["git", "describe", "--always", "--dirty=+"], capture_output=True, text=True, check=False
    ).stdout.strip()
    seeds = list(range(args.first_seed, args.first_seed + args.seeds))
    if args.repeat_seed is not None:
        seeds.append(args.repeat_seed)
    pairs = []
    with tempfile.TemporaryDirectory(prefix="pedl-p4-pbt-") as home:
        db = f"sqlite:///{Path(home) / 'master.db'}"
        master = MasterProcess(Path(home), db, cpu_slots=args.slots).start()
        try:
            http = master.client(timeout=60)
            for seed in seeds:
                order = ["pbt", "random"] if seed % 2 else ["random", "pbt"]
                load_before = os.getloadavg()[0]
                result = {
                    kind: run_search(http, archive, kind, seed, args.variant) for kind in order
                }
                pbt, rand = result["pbt"], result["random"]
                pair = {
                    "seed": seed,
                    "variant": args.variant,
                    "pbt_settings": PBT_VARIANTS[args.variant] or "pbt.yaml",
                    "order": order,
                    "pbt_best": pbt["best_val_accuracy"],
                    "random_best": rand["best_val_accuracy"],
                    "difference": pbt["best_val_accuracy"] - rand["best_val_accuracy"],
                    "pbt_at_least_random": pbt["best_val_accuracy"]
                    >= rand["best_val_accuracy"] - 1e-9,
                    "same_budget": math.isclose(
                        pbt["epochs_trained"], rand["epochs_trained"], rel_tol=1e-9
                    )
                    and math.isclose(pbt["epochs_trained"], BUDGET_EPOCHS, rel_tol=1e-9),
                    # the same seed draws PBT's first population as random search's trials
                    "same_initial_draws": [
                        t["hparams"] for t in pbt["per_trial"] if t["parent_trial_id"] is None
                    ]
                    == [t["hparams"] for t in rand["per_trial"]],
                    "pbt_best_is_a_copy": max(
                        pbt["per_trial"], key=lambda t: t["best_val_accuracy"] or 0.0
                    )["parent_trial_id"]
                    is not None,
                    "wall_ratio": pbt["wall_s"] / rand["wall_s"],
                    "pbt": pbt,
                    "random": rand,
                    "load_avg_before": load_before,
                    "load_avg_after": os.getloadavg()[0],
                    "commit": commit,
                    "utc": datetime.utcnow().isoformat(timespec="seconds"),
                }
                pairs.append(pair)
                with args.out.open("a") as f:
                    f.write(json.dumps(pair) + "\n")
                brief = {k: v for k, v in pair.items() if k not in ("pbt", "random")}
                brief["pbt_epochs"] = pbt["epochs_trained"]
                brief["random_epochs"] = rand["epochs_trained"]
                brief["pbt_wall_s"] = pbt["wall_s"]
                brief["random_wall_s"] = rand["wall_s"]
                brief["pbt_errored"] = pbt["errored"]
                print(json.dumps(brief), flush=True)
        finally:
            master.stop()
    differences = [p["difference"] for p in pairs]
    summary = {
        "pairs": len(pairs),
        "variant": args.variant,
        "pbt_at_least_random": sum(p["pbt_at_least_random"] for p in pairs),
        "difference_median": statistics.median(differences),
        "difference_min": min(differences),
        "difference_max": max(differences),
        "same_budget": all(p["same_budget"] for p in pairs),
        "wall_ratio_median": statistics.median(p["wall_ratio"] for p in pairs),
        "machine": {"nproc": os.cpu_count(), "python": platform.python_version()},
        "argv": sys.argv[1:],
    }
    print(json.dumps(summary, indent=2))


if __name__ == "__main__":
    main()
