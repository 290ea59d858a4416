"""Multi-objective ASHA against random search on digits: validation accuracy (larger is
better) against parameter count (smaller is better), replayed on recorded learning curves.

``bench/p4_curves.py`` recorded, per seed, the 27 configurations random search draws on P4's
space (``dense_units`` 16..128 among them), each trained to 27 epochs with a validation after
every whole epoch. Training is deterministic and a promoted trial continues from its
checkpoint, so what a halving search sees of a configuration at a rung is that curve's value
there (``bench/RESULTS.md``, P4 replayed, checks it against real searches). The parameter
count of P4's model is exact arithmetic: ``conv_filters`` is 16, so it is
``4810 + 523 * dense_units`` (Keras's ``count_params`` agrees; asserted below for three
values when ``--check-keras`` is given).

Per seed: **random search** trains all 27 to 27 epochs (729 epochs) and its front is the
Pareto front of the 27 (final accuracy, parameters); **multi-objective ASHA** is PEDL's own
``adaptive_asha`` searcher with ``searcher.metrics`` (``make_search_method`` through
``SearcherRunner``, the master's code), fed each trial's recorded accuracy at the length it
asks for and its parameter count, one operation at a time in the order it asks; its front is
that of each of its trials' latest result. Measured: the epochs ASHA trains (the training
budget), and the hypervolume of each front (accuracy, and parameters / the space's largest
count; the reference point is the nadir of the two fronts together plus 10% of their range,
so the hypervolume measures the fronts' own region, not the empty space below them). The
goal: ASHA's hypervolume at least 98% of random's at no more than half the epochs.

With ``--live SEED,...`` the same searches also run on a real master (2 slots, the digits
example, ``bench/p5_master.py``'s ``MasterProcess``): ASHA's front is read from
``GET /experiments/{id}/pareto`` and its budget from each trial's batches, and both are printed
beside the replay's for that seed (they agree when training is deterministic); random
search's front stays the recorded one, which is what its live run trains.

Run from ``bench/``: ``../.venv/bin/python p4_pareto.py results/p4_curves_s18_seeds1-8.jsonl.gz``
(``--live 1,2`` to run seeds 1 and 2 live as well).
"""

from __future__ import annotations

import argparse
import base64
import gzip
import json
import math
import statistics
import tempfile
from pathlib import Path
from typing import Any

import _env
import httpx
import p4_simulate
from p4_asha import EXAMPLE, RECORDS_PER_EPOCH, run_experiment
from p5_master import MasterProcess

from pedl import model_def
from pedl.config import parse_config
from pedl.searcher import (
    CloseTrial,
    NewTrial,
    SearcherRunner,
    Shutdown,
    TrainTrial,
    TrialOperation,
    hypervolume,
    make_search_method,
    pareto_front,
    reference_point,
)

EPOCHS = 27
MAX_PARAMS = 4810 + 523 * 128

SPACE = """
name: p4-pareto-{seed}
data: {{validation_fraction: 0.2}}
records_per_epoch: 1438
reproducibility: {{experiment_seed: {seed}}}
hyperparameters:
  global_batch_size: {{type: categorical, vals: [16, 32, 64]}}
  learning_rate: {{type: log, base: 10, minval: -5.0, maxval: 0.0}}
  conv_filters: 16
  dense_units: {{type: int, minval: 16, maxval: 128}}
  dropout: {{type: double, minval: 0.0, maxval: 0.5}}
searcher:
  name: adaptive_asha
  metrics:
    - {{name: val_accuracy, smaller_is_better: false}}
    - {{name: val_params, smaller_is_better: true}}
  max_length: {{epochs: {epochs}}}
  max_trials: 27
  divisor: {divisor}
  max_rungs: {max_rungs}
  mode: {mode}
  max_concurrent_trials: 2
"""


def params(hparams: dict[str, Any]) -> int:
    return 4810 + 523 * int(hparams["dense_units"])


def point(accuracy: float, count: int) -> tuple[float, float]:
    """Normalised, both smaller-is-better."""
    return (-accuracy, count / MAX_PARAMS)


def front_of(points: list[tuple[float, float]]) -> list[tuple[float, float]]:
    return [points[i] for i in pareto_front(points)]


def replay_asha(
    config_yaml: str, curves: list[dict[str, Any]]
) -> tuple[int, list[tuple[float, float]]]:
    """Run PEDL's multi-objective ASHA on the seed's curves; return the epochs it trained and
    each of its trials' latest (normalised) result."""
    by_request = {int(t["request_id"]): t for t in curves}
    config, names = p4_simulate._recorded_draws(parse_config(config_yaml), by_request)
    runner = SearcherRunner(make_search_method(config), seed=config.reproducibility.experiment_seed)
    trained: dict[int, int] = {}
    latest: dict[int, tuple[float, float]] = {}
    hparams_of: dict[int, dict[str, Any]] = {}
    work: list[TrialOperation] = []
    closed: set[int] = set()
    shut_down = False

    def take(ops: list[TrialOperation]) -> None:
        nonlocal shut_down
        for op in ops:
            if isinstance(op, NewTrial):
                hparams = names(op.hparams)
                if by_request[op.request_id]["hparams"] != hparams:
                    raise RuntimeError(
                        f"trial {op.request_id}: other hyperparameters than recorded"
                    )
                hparams_of[op.request_id] = hparams
                trained[op.request_id] = 0
                take(runner.on_trial_created(op.request_id))
            elif isinstance(op, TrainTrial | CloseTrial):
                work.append(op)
            elif isinstance(op, Shutdown):
                shut_down = True

    take(runner.initial_operations())
    while work:
        op = work.pop(0)
        rid = op.request_id
        if rid in closed:
            continue
        if isinstance(op, CloseTrial):
            closed.add(rid)
            take(runner.on_trial_closed(rid))
            continue
        curve = by_request[rid]["epochs"]
        accuracy = float(curve[str(op.length)]["val_accuracy"])
        trained[rid] = max(trained[rid], op.length)
        count = params(hparams_of[rid])
        latest[rid] = point(accuracy, count)
        take(runner.on_validation_completed(rid, accuracy, op.length, [accuracy, float(count)]))
    if not shut_down:
        raise RuntimeError("the search did not shut down")
    return sum(trained.values()), list(latest.values())


def run_live(http: httpx.Client, config_yaml: str) -> dict[str, Any]:
    """Run the search on the master; return its epochs, its trials' (normalised) latest
    points and the load around it."""
    archive = base64.b64encode(model_def.package(EXAMPLE)).decode()
    load = _env.Load.start()
    experiment = run_experiment(http, config_yaml, archive)
    load.stop()
    trials = http.get(f"/experiments/{experiment['id']}/trials", params={"limit": 1000}).json()
    epochs = sum(
        t["total_batches"] / math.ceil(RECORDS_PER_EPOCH / t["hparams"]["global_batch_size"])
        for t in trials["items"]
    )
    front = http.get(f"/experiments/{experiment['id']}/pareto").json()
    points = [
        point(float(p["values"][0]), int(p["values"][1]))
        for p in front["points"]
        if None not in p["values"]
    ]
    return {"experiment_id": experiment["id"], "epochs": epochs, "points": points, **load.as_dict()}


def _seed_row(
    s: dict[str, Any], args: argparse.Namespace, master: MasterProcess | None
) -> dict[str, Any]:
    random_points = [
        point(float(t["epochs"][str(EPOCHS)]["val_accuracy"]), params(t["hparams"]))
        for t in s["trials"]
    ]
    config_yaml = SPACE.format(
        seed=s["seed"],
        epochs=EPOCHS,
        divisor=args.divisor,
        max_rungs=args.max_rungs,
        mode=args.mode,
    )
    epochs, asha_points = replay_asha(config_yaml, s["trials"])
    # The reference: the nadir of both fronts together, 10% of their range beyond
    # (pedl.searcher.reference_point), so the hypervolume is the front's own region.
    reference = reference_point(front_of(random_points) + front_of(asha_points))
    random_hv = hypervolume(front_of(random_points), reference)
    asha_hv = hypervolume(front_of(asha_points), reference)
    row = {
        "seed": s["seed"],
        "asha_epochs": epochs,
        "random_epochs": EPOCHS * len(s["trials"]),
        "budget_ratio": epochs / (EPOCHS * len(s["trials"])),
        "hv_random": random_hv,
        "hv_asha": asha_hv,
        "hv_ratio": asha_hv / random_hv,
        "front_random": len(pareto_front(random_points)),
        "front_asha": len(pareto_front(asha_points)),
    }
    if master is not None:
        live = run_live(master.client(timeout=60), config_yaml)
        live_reference = reference_point(front_of(random_points) + front_of(live["points"]))
        live_hv = hypervolume(front_of(live["points"]), live_reference)
        row["live"] = {
            "experiment_id": live["experiment_id"],
            "asha_epochs": live["epochs"],
            "budget_ratio": live["epochs"] / (EPOCHS * len(s["trials"])),
            "hv_ratio": live_hv / hypervolume(front_of(random_points), live_reference),
            "same_front_as_replay": sorted(front_of(live["points"]))
            == sorted(front_of(asha_points)),
            "loadavg_before": live["loadavg_before"],
            "loadavg_after": live["loadavg_after"],
            "machine": _env.machine(),
        }
    return row


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("curves", type=Path)
    parser.add_argument("--mode", default="aggressive")
    parser.add_argument("--divisor", type=float, default=3)
    parser.add_argument("--max-rungs", type=int, default=4)
    parser.add_argument("--check-keras", action="store_true")
    parser.add_argument("--live", default="", help="seeds to run on a real master too: 1,2")
    args = parser.parse_args()
    live_seeds = {int(x) for x in args.live.split(",") if x}
    if args.check_keras:
        _check_keras()
    opener = gzip.open if args.curves.suffix == ".gz" else open
    with opener(args.curves, "rt") as f:
        seeds = [json.loads(line) for line in f if line.strip()]
    rows = []
    with tempfile.TemporaryDirectory(prefix="pedl-p4-pareto-") as home:
        master = (
            MasterProcess(Path(home), f"sqlite:///{Path(home) / 'master.db'}", cpu_slots=2).start()
            if live_seeds
            else None
        )
        try:
            for s in seeds:
                row = _seed_row(s, args, master if s["seed"] in live_seeds else None)
                rows.append(row)
                print(json.dumps(row), flush=True)
        finally:
            if master is not None:
                master.stop()
    met = sum(1 for r in rows if r["hv_ratio"] >= 0.98 and r["budget_ratio"] <= 0.5)
    print(
        f"settings mode={args.mode} divisor={args.divisor} max_rungs={args.max_rungs}: "
        f"median budget ratio {statistics.median(r['budget_ratio'] for r in rows):.3f}, "
        f"median hypervolume ratio {statistics.median(r['hv_ratio'] for r in rows):.4f}, "
        f"min {min(r['hv_ratio'] for r in rows):.4f}; goal met in {met} of {len(rows)} seeds"
    )


def _check_keras() -> None:
    import keras

    for units in (16, 100, 128):
        model = keras.Sequential(
            [
                keras.Input(shape=(8, 8, 1)),
                keras.layers.Conv2D(16, 3, padding="same", activation="relu"),
                keras.layers.MaxPooling2D(),
                keras.layers.Conv2D(32, 3, padding="same", activation="relu"),
                keras.layers.Flatten(),
                keras.layers.Dense(units, activation="relu"),
                keras.layers.Dropout(0.1),
                keras.layers.Dense(10, activation="softmax"),
            ]
        )
        assert model.count_params() == params({"dense_units": units}), units


if __name__ == "__main__":
    main()
