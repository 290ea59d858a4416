"""P4's learning curves: for each seed, the 27 configurations that ``bench/p4_asha.py``'s
searches draw, each trained to 27 epochs with a validation after every whole epoch (at the
batch count a rung of that many epochs reaches), and the times of each trial's runs, so that
``bench/p4_simulate.py`` can replay any halving search on them.

One experiment per seed on one real master with 2 slots; its searcher is
``p4_curves_searcher/curves_searcher.py``'s custom method (random search's own draws, with
the extra validations). One JSON line per seed goes to ``--out``: per trial its
hyperparameters, ``{epochs: {"val_accuracy", "val_loss", "batches"}}``, and the wall time
of the search.

Run from ``bench/``: ``../.venv/bin/python p4_curves.py --seeds 8``.
"""

from __future__ import annotations

import argparse
import base64
import json
import shutil
import tempfile
from datetime import datetime
from pathlib import Path
from typing import Any

import httpx
import p4_asha
from p5_master import MasterProcess

from pedl import model_def

SEARCHER = Path(__file__).resolve().parent / "p4_curves_searcher" / "curves_searcher.py"

CUSTOM = """
searcher:
  name: custom
  search_method: "curves_searcher:EveryEpoch"
  metric: val_accuracy
  smaller_is_better: false
  max_length: {{epochs: {epochs}}}
"""


def archive() -> str:
    """The digits example with the custom search method added, packaged."""
    with tempfile.TemporaryDirectory(prefix="pedl-p4-curves-") as tmp:
        code = Path(tmp) / "code"
        shutil.copytree(p4_asha.EXAMPLE, code)
        shutil.copy(SEARCHER, code / SEARCHER.name)
        return base64.b64encode(model_def.package(code)).decode()


def curves(http: httpx.Client, config_yaml: str, code: str) -> dict[str, Any]:
    experiment = p4_asha.run_experiment(http, config_yaml, code)
    trials = http.get(f"/experiments/{experiment['id']}/trials", params={"limit": 1000}).json()
    per_trial = []
    for trial in trials["items"]:
        rows = http.get(f"/trials/{trial['id']}/metrics", params={"kind": "validation"}).json()
        batch_size = trial["hparams"]["global_batch_size"]
        by_batches = {row["total_batches"]: row["metrics"] for row in rows}
        epochs = {}
        for n in range(1, 1000):
            batches = -(-n * p4_asha.RECORDS_PER_EPOCH // batch_size)
            if batches not in by_batches:
                break
            epochs[n] = {"batches": batches, **by_batches[batches]}
        per_trial.append(
            {"request_id": trial["request_id"], "hparams": trial["hparams"], "epochs": epochs}
        )
    created = datetime.fromisoformat(experiment["created_at"])
    ended = datetime.fromisoformat(experiment["ended_at"])
    return {"wall_s": (ended - created).total_seconds(), "trials": per_trial}


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--seeds", type=int, default=8)
    parser.add_argument("--first-seed", type=int, default=1)
    parser.add_argument("--epochs", type=int, default=27)
    parser.add_argument("--out", type=Path, default=Path("results/p4_curves.jsonl"))
    args = parser.parse_args()
    args.out.parent.mkdir(parents=True, exist_ok=True)
    code = archive()
    with tempfile.TemporaryDirectory(prefix="pedl-p4-curves-") as home:
        master = MasterProcess(Path(home), f"sqlite:///{Path(home) / 'master.db'}", cpu_slots=2)
        master.start()
        try:
            http = master.client(timeout=60)
            for seed in range(args.first_seed, args.first_seed + args.seeds):
                config = (
                    p4_asha.COMMON.format(kind="curves", seed=seed)
                    + p4_asha.SPACE
                    + CUSTOM.format(epochs=args.epochs)
                )
                result = {"seed": seed, **curves(http, config, code)}
                with args.out.open("a") as f:
                    f.write(json.dumps(result) + "\n")
                print(seed, result["wall_s"], flush=True)
        finally:
            master.stop()


if __name__ == "__main__":
    main()
