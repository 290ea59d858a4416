"""P4 beside Ray Tune: PEDL's ASHA and random search, and Ray Tune's ASHA and FIFO, in one run
on the same 27 digits configurations, the same data, 2 slots.

For each seed, four searches one after the other (PEDL's random search first, the other
three in an order that rotates by seed):

- PEDL ``adaptive_asha`` and ``random`` on a real master with 2 slots, exactly as
  ``p4_asha.py`` runs them (its functions; default settings: aggressive, divisor 3, 4 rungs);
- Ray Tune's ``ASHAScheduler`` (``reduction_factor=3``, ``grace_period=1``, ``max_t`` the
  epochs: the same rungs at 1, 3, 9 and 27 epochs; Ray's ASHA only stops, it never pauses) and
  its FIFO scheduler (every configuration to the end: Ray's own random search), on a local
  Ray instance of 2 CPUs started once for the run (``address="local"``, its own temporary
  directory), ``max_concurrent_trials=2``, ``reuse_actors=True``, 1 CPU a trial.

Ray's trials train the configurations PEDL's random search drew for that seed (read back from
its trials), the same model (``examples/digits_keras``'s layers, loss and optimizer), the same
data split, batch size and epochs, each from its own initial seed (the seed times 1000 plus its
index: PEDL gives each trial one too); each trains with one ``fit`` per segment between rungs
(as PEDL's trials train between validations) and validates only at a rung (ASHA) or at the end
(FIFO), as PEDL's searches validate. Each tool's wall ratio is its ASHA's wall time ÷ its own
random search's; "matching" is its ASHA's best validation accuracy equal to (or above) its own
random search's best. Ray's wall time is ``Tuner.fit()``'s (the Ray instance's start is
reported apart, once); PEDL's is the master's record (created → ended).

Run from ``bench/`` (Ray Tune's extra is for the benchmark only):

    ../.venv/bin/python -m pip install "ray[tune]==2.60.0"
    ../.venv/bin/python p4_raytune.py --seeds 8 --out results/p4_raytune.jsonl
"""

from __future__ import annotations

import argparse
import base64
import json
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
RUNG_EPOCHS = (1, 3, 9, 27)


def ray_trainable(config: dict[str, Any]) -> None:
    """One configuration, trained as PEDL's digits trial trains it, reporting its validation
    accuracy at the epochs in ``config["report_at"]``."""
    import sys as _sys

    _sys.path.insert(0, config["root"])
    import keras
    import tensorflow as tf
    from ray import tune

    from examples.digits_keras import data
    from examples.digits_keras.model_def import network

    hp = config["hparams"]
    # one seed per trial, as PEDL gives each trial its own
    keras.utils.set_random_seed(config["trial_seeds"][json.dumps(hp, sort_keys=True)])
    tf.config.experimental.enable_op_determinism()
    (x, y), (x_val, y_val) = data.load(0.2)
    model = network(hp["conv_filters"], hp["dense_units"], hp["dropout"])
    model.compile(
        optimizer=keras.optimizers.Adam(learning_rate=hp["learning_rate"]),
        loss="sparse_categorical_crossentropy",
        metrics=["accuracy"],
    )
    done = 0
    for epoch in config["report_at"]:
        model.fit(
            x,
            y,
            batch_size=hp["global_batch_size"],
            epochs=epoch,
            initial_epoch=done,
            shuffle=True,
            verbose=0,
        )
        done = epoch
        _, accuracy = model.evaluate(x_val, y_val, batch_size=256, verbose=0)
        tune.report({"epoch": epoch, "val_accuracy": float(accuracy)})


def run_ray(
    kind: str, configurations: list[dict[str, Any]], seed: int, epochs: int
) -> dict[str, Any]:
    from ray import tune
    from ray.tune.schedulers import ASHAScheduler, FIFOScheduler

    rungs = [e for e in RUNG_EPOCHS if e < epochs] + [epochs]
    if kind == "ray_asha":
        scheduler: Any = ASHAScheduler(
            time_attr="epoch",
            max_t=epochs,
            grace_period=1,
            reduction_factor=3,
            brackets=1,
        )
        report_at = rungs
    else:
        scheduler = FIFOScheduler()
        report_at = [epochs]
    trainable = tune.with_resources(ray_trainable, {"cpu": 1})
    param_space = {
        "hparams": tune.grid_search(configurations),
        "report_at": report_at,
        "root": str(ROOT),
        "trial_seeds": {
            json.dumps(c, sort_keys=True): seed * 1000 + i for i, c in enumerate(configurations)
        },
    }
    load = _env.Load.start()
    with tempfile.TemporaryDirectory(prefix="pedl-p4-ray-") as storage:
        tuner = tune.Tuner(
            trainable,
            param_space=param_space,
            tune_config=tune.TuneConfig(
                metric="val_accuracy",
                mode="max",
                scheduler=scheduler,
                max_concurrent_trials=2,
                reuse_actors=True,
            ),
            run_config=tune.RunConfig(storage_path=storage, verbose=0),
        )
        started = time.perf_counter()
        results = tuner.fit()
        wall = time.perf_counter() - started
    load.stop()
    per_trial: dict[str, dict[str, Any]] = {}
    epochs_trained = 0.0
    for result in (results[i] for i in range(len(results))):
        if result.error:
            raise RuntimeError(f"Ray trial failed: {result.error}")
        history, config = result.metrics_dataframe, result.config
        assert history is not None and config is not None, "a Ray trial without results"
        trained = int(history["epoch"].max())
        per_trial[json.dumps(config["hparams"], sort_keys=True)] = {
            "epochs": trained,
            "best_val_accuracy": float(history["val_accuracy"].max()),
        }
        epochs_trained += trained
    return {
        "wall_s": wall,
        "epochs_trained": epochs_trained,
        "best_val_accuracy": max(t["best_val_accuracy"] for t in per_trial.values()),
        "trials": len(per_trial),
        **load.as_dict(),
        "per_trial": per_trial,
    }


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--seeds", type=int, default=8)
    parser.add_argument("--first-seed", type=int, default=1)
    parser.add_argument("--epochs", type=int, default=27)
    parser.add_argument("--slots", type=int, default=2)
    parser.add_argument("--out", type=Path, default=Path("results/p4_raytune.jsonl"))
    args = parser.parse_args()
    args.out.parent.mkdir(parents=True, exist_ok=True)

    import ray

    archive = base64.b64encode(model_def.package(p4_asha.EXAMPLE)).decode()
    asha_settings = dict(p4_asha.ASHA_DEFAULTS)
    kinds = ["asha", "random", "ray_asha", "ray_fifo"]
    rows: list[dict[str, Any]] = []
    with tempfile.TemporaryDirectory(prefix="pedl-p4-") as home:
        started = time.perf_counter()
        ray.init(
            address="local",
            num_cpus=args.slots,
            include_dashboard=False,
            log_to_driver=False,
            _temp_dir=str(Path(home) / "ray"),
        )
        ray_start_s = time.perf_counter() - started
        master = MasterProcess(
            Path(home), f"sqlite:///{Path(home) / 'master.db'}", cpu_slots=args.slots
        ).start()
        try:
            http = master.client(timeout=60)
            for seed in range(args.first_seed, args.first_seed + args.seeds):
                # Ray's searches train the configurations PEDL's random search drew: it runs
                # first; the other three rotate by seed
                rest = kinds[:1] + kinds[2:]
                shift = (seed - args.first_seed) % len(rest)
                order = ["random", *rest[shift:], *rest[:shift]]
                result: dict[str, Any] = {}
                configurations: list[dict[str, Any]] = []
                for kind in order:
                    if kind in ("asha", "random"):
                        result[kind] = p4_asha.run_search(
                            http, archive, kind, seed, args.epochs, asha_settings
                        )
                        if kind == "random":
                            configurations = [json.loads(h) for h in result[kind]["per_trial"]]
                    else:
                        result[kind] = run_ray(kind, configurations, seed, args.epochs)
                row: dict[str, Any] = {
                    "seed": seed,
                    "order": order,
                    "asha_settings": asha_settings,
                    "same_configurations": all(
                        result[k]["per_trial"].keys() == result["random"]["per_trial"].keys()
                        for k in ("ray_asha", "ray_fifo")
                    )
                    and result["asha"]["per_trial"].keys() <= result["random"]["per_trial"].keys(),
                    "pedl": p4_asha.ratios(result["asha"], result["random"]),
                    "ray": p4_asha.ratios(result["ray_asha"], result["ray_fifo"]),
                    **{k: p4_asha.without_per_trial(v) for k, v in result.items()},
                    "utc": datetime.utcnow().isoformat(timespec="seconds"),
                }
                rows.append(row)
                with args.out.open("a") as f:
                    f.write(json.dumps(row) + "\n")
                print(json.dumps(row), flush=True)
        finally:
            master.stop()
            ray.shutdown()

    def tool(name: str) -> dict[str, Any]:
        walls = [r[name]["wall_ratio"] for r in rows]
        return {
            "wall_ratio_median": statistics.median(walls),
            "wall_ratio_range": [min(walls), max(walls)],
            "epochs_ratio_median": statistics.median(r[name]["epochs_ratio"] for r in rows),
            "seeds_matching": sum(r[name]["best_matches"] for r in rows),
            "seeds_at_least_random": sum(r[name]["best_at_least_random"] for r in rows),
        }

    summary: dict[str, Any] = {
        "seeds": len(rows),
        "pedl": tool("pedl"),
        "ray": tool("ray"),
        "asha_wall_s_median": {
            "pedl": statistics.median(r["asha"]["wall_s"] for r in rows),
            "ray": statistics.median(r["ray_asha"]["wall_s"] for r in rows),
        },
        "random_wall_s_median": {
            "pedl": statistics.median(r["random"]["wall_s"] for r in rows),
            "ray": statistics.median(r["ray_fifo"]["wall_s"] for r in rows),
        },
        "ray_start_s": ray_start_s,
        "same_configurations": all(r["same_configurations"] for r in rows),
        "loadavg_1m_range": _env.load_range([r[k] for r in rows for k in kinds]),
        "machine": _env.machine(),
        "argv": sys.argv[1:],
    }
    print(json.dumps(summary, indent=2))


if __name__ == "__main__":
    main()
