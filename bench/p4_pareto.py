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

With ``--live SEED,...`` both searches also run on a real master (2 slots, the digits
example, ``bench/p5_master.py``'s ``MasterProcess``), one after the other: multi-objective
ASHA and random search with the same space, seed and objectives (the same 27 draws and trial
seeds). Each front is read from ``GET /experiments/{id}/pareto`` and each budget from its
trials' batches; the live ratio is ASHA's against the live random search's (the recorded
curves come from older code, whose training differs: the ratio against the recorded front is
printed beside it). ASHA's trials that trained to the end must stand where random search's
do (checked: ``full_length_points_equal``). The live order in which trials report decides
asynchronous promotions, which the replay models only as one sequence of events; ``--timed N``
replays each seed N times more on ``p4_simulate``'s two timed slots, each stretch of training
jittered (``--spread``).
``--noise-floor N`` scores random search itself, stopped 1 to N epochs before the end (each
trial's accuracy there), against its own full front: how much the measure moves when only
the last epochs' validation noise changes.
``--against recorded`` runs only ASHA live and compares it with the recorded full search,
which is valid when the curves were recorded by the same code: every point of the live
front must then equal the recorded curve's at the length its trial trained to (checked:
``points_equal_recorded``).

Run from ``bench/``: ``../.venv/bin/python p4_pareto.py results/p4_curves_s18_seeds1-8.jsonl.gz``
(``--live 1,2`` to run seeds 1 and 2 live as well).
"""

from __future__ import annotations

import argparse
import base64
import gzip
import json
import random
import statistics
import sys
import tempfile
from datetime import datetime
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


def hv_ratio(
    asha_points: list[tuple[float, float]], random_points: list[tuple[float, float]]
) -> float:
    """ASHA's front's hypervolume ÷ random search's, against the nadir of the two fronts
    together, 10% of their range beyond (pedl.searcher.reference_point): the fronts' own
    region, not the empty space below them."""
    asha, rand = front_of(asha_points), front_of(random_points)
    reference = reference_point(rand + asha)
    return hypervolume(asha, reference) / hypervolume(rand, reference)


def meets_goal(row: dict[str, Any]) -> bool:
    """Within 2% of random search's hypervolume at no more than half its epochs."""
    return bool(row["hv_ratio"] >= 0.98 and row["budget_ratio"] <= 0.5)


def front_of(points: list[tuple[float, float]]) -> list[tuple[float, float]]:
    return [points[i] for i in pareto_front(points)]


def curve_point(trial: dict[str, Any], epochs: int = EPOCHS) -> tuple[float, float]:
    """A recorded trial's (normalised) point after ``epochs``."""
    return point(float(trial["epochs"][str(epochs)]["val_accuracy"]), params(trial["hparams"]))


def shortened_random(curves: list[dict[str, Any]], epochs: int) -> float:
    """The hypervolume ratio of the same full random search stopped at ``epochs`` (every
    trial's accuracy there) against its front at :data:`EPOCHS`: how far the measure moves
    when nothing but the last epochs' validation noise changes (``--noise-floor``)."""
    full = [curve_point(t) for t in curves]
    return hv_ratio([curve_point(t, epochs) for t in curves], full)


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


def replay_timed(
    config_yaml: str, curves: list[dict[str, Any]], jitter_seed: int, spread: float
) -> tuple[int, list[tuple[float, float]]]:
    """As :func:`replay_asha`, but on ``p4_simulate``'s two timed slots (a real search's
    asynchrony: which trial reports first decides promotions), each stretch of training's
    cost jittered (lognormal, ``spread``; seeded by ``jitter_seed``)."""
    outcome = p4_simulate.simulate(
        config_yaml,
        curves,
        p4_simulate.COSTS,
        objectives=lambda hparams, at: [at["val_accuracy"], float(params(hparams))],
        jitter=(random.Random(jitter_seed), spread),
    )
    hparams_of = {int(t["request_id"]): t["hparams"] for t in curves}
    latest = {
        rid: point(accuracy, params(hparams_of[rid])) for rid, _, accuracy in outcome.validations
    }
    return outcome.epochs, list(latest.values())


def run_live(http: httpx.Client, config_yaml: str) -> dict[str, Any]:
    """Run the search on the master; return its epochs, its trials' (normalised) latest
    points (by their hyperparameters) and the load around it."""
    archive = base64.b64encode(model_def.package(EXAMPLE)).decode()
    load = _env.Load.start()
    experiment = run_experiment(http, config_yaml, archive)
    load.stop()
    trials = http.get(f"/experiments/{experiment['id']}/trials", params={"limit": 1000}).json()
    # epochs from records (a trial of n epochs trains ceil(n * records / batch) batches, so
    # batches ÷ ceil(records / batch) falls short: 26.4 for 27 epochs at batch 64)
    trained = {
        json.dumps(t["hparams"], sort_keys=True): t["total_batches"]
        * t["hparams"]["global_batch_size"]
        / RECORDS_PER_EPOCH
        for t in trials["items"]
    }
    front = http.get(f"/experiments/{experiment['id']}/pareto").json()
    points = {
        json.dumps(p["hparams"], sort_keys=True): point(float(p["values"][0]), int(p["values"][1]))
        for p in front["points"]
        if None not in p["values"]
    }
    return {
        "experiment_id": experiment["id"],
        "epochs": sum(trained.values()),
        "points": points,
        "lengths": {h: round(epochs) for h, epochs in trained.items()},
        "wall_s": (
            datetime.fromisoformat(experiment["ended_at"])
            - datetime.fromisoformat(experiment["created_at"])
        ).total_seconds(),
        **load.as_dict(),
    }


def random_config(asha_yaml: str) -> str:
    """The same search as random search: every trial to the full length."""
    lines = asha_yaml.splitlines()
    kept = [
        line for line in lines if not line.lstrip().startswith(("divisor:", "max_rungs:", "mode:"))
    ]
    if len(lines) - len(kept) != 3 or "  name: adaptive_asha" not in kept:
        raise RuntimeError("p4_pareto's SPACE no longer has the ASHA lines this expects")
    return "\n".join(kept).replace("  name: adaptive_asha", "  name: random") + "\n"


def live_against_recorded(
    http: httpx.Client, config_yaml: str, curves: list[dict[str, Any]]
) -> dict[str, Any]:
    """Multi-objective ASHA alone on the master, against the recorded full random search
    (``curves``, recorded by the same code): its ratio against the recorded front, and
    whether every point of its front is exactly the recorded curve's at the length it
    trained to (``points_equal_recorded``; when true, the recorded front is the one a live
    random search of the same draws would give, since a trial's curve does not depend on
    where it was paused)."""
    asha = run_live(http, config_yaml)
    by_hparams = {json.dumps(t["hparams"], sort_keys=True): t for t in curves}
    random_points = [curve_point(t) for t in curves]
    asha_points = list(asha["points"].values())
    random_epochs = EPOCHS * len(curves)
    return {
        "experiment_ids": [asha["experiment_id"]],
        "asha_epochs": asha["epochs"],
        "random_epochs": random_epochs,
        "budget_ratio": asha["epochs"] / random_epochs,
        "hv_ratio": hv_ratio(asha_points, random_points),
        "points_equal_recorded": all(
            h in by_hparams and p == curve_point(by_hparams[h], asha["lengths"][h])
            for h, p in asha["points"].items()
        ),
        "asha_full_length_trials": sum(1 for n in asha["lengths"].values() if n == EPOCHS),
        "front_random": len(front_of(random_points)),
        "front_asha": len(front_of(asha_points)),
        "front_points": {
            "random": sorted(front_of(random_points)),
            "asha": sorted(front_of(asha_points)),
        },
        "wall_s": {"asha": asha["wall_s"]},
        "loadavg_before": asha["loadavg_before"],
        "loadavg_after": asha["loadavg_after"],
        "machine": _env.machine(),
    }


def live_row(
    http: httpx.Client, config_yaml: str, random_points: list[tuple[float, float]]
) -> dict[str, Any]:
    """Multi-objective ASHA and random search (the same space, seed and objectives) on the
    master; the hypervolume ratio against the live random search's front (and, for
    comparison, against the recorded one)."""
    asha = run_live(http, config_yaml)
    rand = run_live(http, random_config(config_yaml))
    asha_points, rand_points = list(asha["points"].values()), list(rand["points"].values())
    asha_front, rand_front = front_of(asha_points), front_of(rand_points)
    return {
        "experiment_ids": [asha["experiment_id"], rand["experiment_id"]],
        "asha_epochs": asha["epochs"],
        "random_epochs": rand["epochs"],
        "budget_ratio": asha["epochs"] / rand["epochs"],
        "hv_ratio": hv_ratio(asha_points, rand_points),
        "hv_ratio_against_recorded": hv_ratio(asha_points, random_points),
        # ASHA's trials are random search's (same draws, same trial seeds) stopped early:
        # those it trained to the end must stand where random search's do
        "full_length_points_equal": all(
            rand["points"].get(h) == p
            for h, p in asha["points"].items()
            if asha["lengths"].get(h) == EPOCHS
        ),
        "asha_full_length_trials": sum(1 for n in asha["lengths"].values() if n == EPOCHS),
        "front_random": len(rand_front),
        "front_asha": len(asha_front),
        # (-accuracy, parameters / the largest), as the hypervolume takes them
        "front_points": {"random": sorted(rand_front), "asha": sorted(asha_front)},
        "wall_s": {"asha": asha["wall_s"], "random": rand["wall_s"]},
        "loadavg_before": asha["loadavg_before"],
        "loadavg_after": rand["loadavg_after"],
        "machine": _env.machine(),
    }


def _seed_row(
    s: dict[str, Any], args: argparse.Namespace, master: MasterProcess | None
) -> dict[str, Any]:
    random_points = [curve_point(t) for t in s["trials"]]
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
    if args.noise_floor:
        row["random_shortened"] = {
            str(e): shortened_random(s["trials"], e)
            for e in range(EPOCHS - args.noise_floor, EPOCHS)
        }
    if args.timed:
        timed = []
        for jitter_seed in range(args.timed):
            t_epochs, t_points = replay_timed(config_yaml, s["trials"], jitter_seed, args.spread)
            timed.append(
                {
                    "budget_ratio": t_epochs / (EPOCHS * len(s["trials"])),
                    "hv_ratio": hv_ratio(t_points, random_points),
                }
            )
        row["timed"] = timed
    if master is not None:
        http = master.client(timeout=60)
        row["live"] = (
            live_against_recorded(http, config_yaml, s["trials"])
            if args.against == "recorded"
            else live_row(http, config_yaml, random_points)
        )
    return row


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("curves", type=Path)
    parser.add_argument("--mode", default="aggressive")
    parser.add_argument("--divisor", type=float, default=3)
    parser.add_argument("--max-rungs", type=int, default=4)
    parser.add_argument("--check-keras", action="store_true")
    parser.add_argument("--live", default="", help="seeds to run on a real master too: 1,2")
    parser.add_argument(
        "--timed",
        type=int,
        default=0,
        help="also replay each seed this many times on two timed slots, jittered",
    )
    parser.add_argument("--spread", type=float, default=0.2, help="the jitter's lognormal sigma")
    parser.add_argument(
        "--noise-floor",
        type=int,
        default=0,
        help="also score random search itself stopped 1..N epochs early against its full front",
    )
    parser.add_argument(
        "--against",
        choices=["live", "recorded"],
        default="live",
        help="--live's random search: run live too, or the recorded curves (same code only)",
    )
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
    live = [r["live"] for r in rows if "live" in r]
    if live:
        live_met = sum(map(meets_goal, live))
        print(
            f"live: goal met in {live_met} of {len(live)} seeds; "
            f"median budget {statistics.median(r['budget_ratio'] for r in live):.3f}, "
            f"median hypervolume ratio {statistics.median(r['hv_ratio'] for r in live):.4f}, "
            f"min {min(r['hv_ratio'] for r in live):.4f}; "
            f"points equal (full length, or recorded) in {sum(map(_points_equal, live))}"
            f" of {len(live)}; load {_env.load_range(live)}"
        )
    met = sum(map(meets_goal, rows))
    if args.noise_floor:
        for e in range(EPOCHS - args.noise_floor, EPOCHS):
            ratios = [r["random_shortened"][str(e)] for r in rows]
            print(
                f"random search itself at {e} of {EPOCHS} epochs: hypervolume ratio >= 0.98 in "
                f"{sum(x >= 0.98 for x in ratios)} of {len(ratios)} seeds, within 2% either way "
                f"in {sum(0.98 <= x <= 1.02 for x in ratios)}; "
                f"median {statistics.median(ratios):.4f}, min {min(ratios):.4f}"
            )
    if args.timed:
        runs = [t for r in rows for t in r["timed"]]
        timed_met = sum(map(meets_goal, runs))
        print(
            f"timed (2 slots, jitter {args.spread}): goal met in {timed_met} of {len(runs)} runs; "
            f"median budget {statistics.median(t['budget_ratio'] for t in runs):.3f}, "
            f"median hypervolume ratio {statistics.median(t['hv_ratio'] for t in runs):.4f}"
        )
    print(
        f"settings mode={args.mode} divisor={args.divisor} max_rungs={args.max_rungs}: "
        f"median budget ratio {statistics.median(r['budget_ratio'] for r in rows):.3f}, "
        f"median hypervolume ratio {statistics.median(r['hv_ratio'] for r in rows):.4f}, "
        f"min {min(r['hv_ratio'] for r in rows):.4f}; goal met in {met} of {len(rows)} seeds"
    )


def _points_equal(live: dict[str, Any]) -> bool:
    """The live row's exactness check, whichever random search it was against."""
    return bool(live.get("full_length_points_equal", live.get("points_equal_recorded")))


def _check_keras() -> None:
    sys.path.insert(0, str(EXAMPLE.parents[1]))
    from examples.digits_keras.model_def import network

    for units in (16, 100, 128):
        model = network(16, units, 0.1)
        assert model.count_params() == params({"dense_units": units}), units


if __name__ == "__main__":
    main()
