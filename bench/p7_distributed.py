"""P7 (issues 20, 38): samples/s of one trial on 1 and 2 CPU workers, PEDL beside a plain loop.

Run by hand, never by the test suite::

    .venv/bin/python bench/p7_distributed.py [--batches 120] [--min-rounds 6] [--max-rounds 12]

For each model (the digits conv net of ``examples/digits_keras``, and a conv net whose
training step takes well over 5 ms on one thread) and each of four setups, side by side in
one run, each worker a fresh process limited to one core's worth of TensorFlow (intra- and
inter-op threads 1, ``TF_NUM_INTRAOP_THREADS``/``TF_NUM_INTEROP_THREADS``):

- ``pedl-1`` / ``pedl-2``: PEDL's Keras controller on 1 worker, and on 2 worker processes
  started as a launcher starts them (``DistributedContext.to_env()`` and ``TF_CONFIG`` on
  loopback: ``MultiWorkerMirroredStrategy``, PEDL's own ``strategy.run(train_step)`` loop);
- ``plain_loop-1`` / ``plain_loop-2`` (the "plain loop", called "plain Keras" before):
  Keras under ``MultiWorkerMirroredStrategy`` without PEDL, in a custom loop, not ``fit``:
  Keras 3's ``fit`` fails under that strategy (keras-team/keras#20585), so the peer is the
  loop a user writes instead: ``strategy.run`` of the compiled model's ``train_step``, the
  logs reduced (``MEAN``) and the loss read every step, the same global batch split the
  same way.

Throughput is the global batch times the batches between the first time mark at or after
batch ``--warmup`` and the last, over the wall time between them, on the chief (marks every
10 batches: PEDL's chunk boundaries, timed by its metrics recorder as in P1; a plain loop's
every 10th batch; tracing, the first collectives and the closing validation and checkpoint
excluded).

A round measures every model and setup once, side by side (the order reverses from round to
round, so drift in the machine's load hits both setups alike); each round gives each model
and setup a ratio of 2 workers to 1. Rounds go on until every such ratio's median has a ~95%
interval (order statistics, ``bench/_env.py``) within ±``--rel-halfwidth`` of it (at least
``--min-rounds``, at most ``--max-rounds``; ``--repeats N`` runs exactly N rounds). Prints one
JSON line per measurement (with the load average before and after it and the machine), a
table with the ratios of 2 workers to 1 and their intervals, and a JSON summary line with
the rounds taken, the load averages seen and the machine (issue 38's goal: PEDL's ratio at
least the plain loop's at both step sizes; on an idle machine at least 1.25 for ``conv`` and
1.7 for ``conv128``).
"""

from __future__ import annotations

import argparse
import itertools
import json
import os
import pickle
import socket
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

import _env

ROOT = Path(__file__).resolve().parents[1]
CHUNK = 10
"""Batches between two time marks (PEDL's scheduling_unit here)."""
SETUPS = ("pedl", "plain_loop")
"""PEDL's controller, and the plain loop (a custom MultiWorkerMirroredStrategy step)."""
MODELS = {
    "digits": {"global_batch_size": 32},
    "conv": {"global_batch_size": 32},
    "conv128": {"global_batch_size": 128},
}


def _free_ports(n: int) -> list[int]:
    sockets = [socket.socket() for _ in range(n)]
    for s in sockets:
        s.bind(("127.0.0.1", 0))
    ports = [s.getsockname()[1] for s in sockets]
    for s in sockets:
        s.close()
    return ports


def _environments(size: int) -> list[dict[str, str]]:
    from pedl import core

    if size == 1:
        return [{}]
    pub, pull, *tf_ports = _free_ports(2 + size)
    workers = [f"127.0.0.1:{p}" for p in tf_ports]
    envs = []
    for rank in range(size):
        env = core.DistributedContext(
            rank=rank, size=size, local_rank=rank, local_size=size, pub_port=pub, pull_port=pull
        ).to_env()
        env["TF_CONFIG"] = json.dumps(
            {"cluster": {"worker": workers}, "task": {"type": "worker", "index": rank}}
        )
        envs.append(env)
    return envs


def one_thread_environment() -> dict[str, str]:
    """A worker process's environment: this one's, no GPU, TensorFlow on one thread
    (intra- and inter-op), the repository and ``bench/`` importable."""
    return {
        **os.environ,
        "CUDA_VISIBLE_DEVICES": "",
        "TF_CPP_MIN_LOG_LEVEL": "2",
        "TF_NUM_INTRAOP_THREADS": "1",
        "TF_NUM_INTEROP_THREADS": "1",
        "PYTHONPATH": f"{ROOT}{os.pathsep}{ROOT / 'bench'}",
    }


def measure(mode: str, model: str, size: int, batches: int, warmup: int) -> dict[str, Any]:
    """One measurement: ``size`` fresh worker processes; the chief's throughput."""
    load = _env.Load.start()
    with tempfile.TemporaryDirectory(prefix="pedl-p7-") as tmp:
        job = {"mode": mode, "model": model, "batches": batches, "warmup": warmup, "dir": tmp}
        procs = []
        for env in _environments(size):
            full = one_thread_environment() | env
            procs.append(
                subprocess.Popen(
                    [sys.executable, __file__, "--worker", json.dumps(job)],
                    cwd=ROOT,
                    env=full,
                    stdout=subprocess.PIPE,
                    stderr=subprocess.STDOUT,
                )
            )
        outs = [p.communicate(timeout=900)[0].decode(errors="replace") for p in procs]
        for p, out in zip(procs, outs, strict=True):
            if p.returncode:
                raise RuntimeError(f"{mode}-{size} {model} failed:\n{out[-4000:]}")
        with open(Path(tmp) / "result-0.pkl", "rb") as f:
            result = pickle.load(f)
        marks: list[tuple[int, float]] = result["marks"]
    global_batch = MODELS[model]["global_batch_size"]
    marks = [m for m in marks if m[0] >= warmup]
    load.stop()
    (first_batch, first), (last_batch, last) = marks[0], marks[-1]
    chunks = [(t1 - t0) / (b1 - b0) for (b0, t0), (b1, t1) in itertools.pairwise(marks)]
    return {
        "mode": mode,
        "model": model,
        "workers": size,
        "samples_per_s": global_batch * (last_batch - first_batch) / (last - first),
        "median_step_ms": 1000 * statistics.median(chunks),
        **load.as_dict(),
        "machine": _env.machine() | result["versions"],
    }


# The worker side -------------------------------------------------------------------------


def _conv_data(n: int, seed: int) -> tuple[Any, Any]:
    import numpy as np

    rng = np.random.default_rng(seed)
    return rng.normal(size=(n, 24, 24, 3)).astype("float32"), rng.integers(0, 10, n).astype("int32")


def _conv_model() -> Any:
    import keras

    model = keras.Sequential(
        [
            keras.Input((24, 24, 3)),
            keras.layers.Conv2D(32, 3, padding="same", activation="relu"),
            keras.layers.Conv2D(32, 3, padding="same", activation="relu"),
            keras.layers.GlobalAveragePooling2D(),
            keras.layers.Dense(10, activation="softmax"),
        ]
    )
    model.compile(
        optimizer=keras.optimizers.Adam(1e-3),
        loss="sparse_categorical_crossentropy",
        metrics=["accuracy"],
    )
    return model


def _digits_model() -> Any:
    import keras

    model = keras.Sequential(
        [
            keras.Input((8, 8, 1)),
            keras.layers.Conv2D(8, 3, padding="same", activation="relu"),
            keras.layers.MaxPooling2D(),
            keras.layers.Conv2D(16, 3, padding="same", activation="relu"),
            keras.layers.Flatten(),
            keras.layers.Dense(32, activation="relu"),
            keras.layers.Dense(10, activation="softmax"),
        ]
    )
    model.compile(
        optimizer=keras.optimizers.Adam(1e-3),
        loss="sparse_categorical_crossentropy",
        metrics=["accuracy"],
    )
    return model


def _data(model: str) -> tuple[Any, Any]:
    if model.startswith("conv"):
        return _conv_data(1024, 0)
    sys.path.insert(0, str(ROOT))
    from examples.digits_keras import data

    return data.load(0.2)[0]


def _worker(job: dict[str, Any]) -> None:
    import tensorflow as tf

    times: list[tuple[int, float]] = []
    size = int(os.environ.get("PEDL_SIZE", "1"))
    if job["mode"] == "pedl":
        _pedl_worker(job, times)
    else:
        _plain_loop_worker(job, times, size)
    rank = int(os.environ.get("PEDL_RANK", "0"))
    if rank == 0:
        import keras

        versions = {"tensorflow": tf.__version__, "keras": keras.__version__}
        with open(Path(job["dir"]) / "result-0.pkl", "wb") as f:
            pickle.dump({"marks": times, "versions": versions}, f)


def _pedl_worker(job: dict[str, Any], times: list[tuple[int, float]]) -> None:
    from pedl import core
    from pedl.config import parse_config
    from pedl.keras import TFKerasTrial, TFKerasTrialController
    from pedl.storage import SharedFSStorage

    model_name = job["model"]

    class Timer(core.MemoryBackend):
        """Times the chunk boundaries (every ``CHUNK`` batches), as P1 does: no callback
        is added to the training loop."""

        def write_metrics(self, kind: Any, total_batches: int, metrics: Any, *rest: Any) -> None:
            if kind == core.MetricKind.TRAINING:
                times.append((total_batches, time.perf_counter()))
            super().write_metrics(kind, total_batches, metrics, *rest)

    class Trial(TFKerasTrial):
        def build_model(self) -> Any:
            return _conv_model() if model_name.startswith("conv") else _digits_model()

        def build_training_data_loader(self) -> Any:
            return _data(model_name)

        def build_validation_data_loader(self) -> Any:
            x, y = _data(model_name)
            return x[:64], y[:64]

    distributed = (
        core.DistributedContext.from_env()
        if int(os.environ.get("PEDL_SIZE", "1")) > 1
        else core.DistributedContext.single()
    )
    batch = MODELS[model_name]["global_batch_size"]
    config = parse_config(
        f"""
hyperparameters: {{global_batch_size: {batch}}}
searcher: {{name: single, metric: val_loss, max_length: {{batches: {job["batches"]}}}}}
scheduling_unit: {CHUNK}
checkpoint_policy: none
reproducibility: {{experiment_seed: 1}}
"""
    )
    code = Path(job["dir"]) / f"code-{distributed.rank}"
    code.mkdir()
    info = core.TrialInfo(
        trial_id=1,
        experiment_id=1,
        hparams={"global_batch_size": batch},
        trial_seed=1,
        config=config,
        code_dir=code,
    )
    context = core.build_context(
        info,
        backend=Timer([job["batches"]]),
        storage=SharedFSStorage(Path(job["dir"]) / "checkpoints"),
        distributed=distributed,
    )
    TFKerasTrialController(Trial, context).run()
    distributed.close()


def _plain_loop_worker(job: dict[str, Any], times: list[tuple[int, float]], size: int) -> None:
    import keras
    import tensorflow as tf

    strategy = tf.distribute.MultiWorkerMirroredStrategy(
        communication_options=tf.distribute.experimental.CommunicationOptions(
            implementation=tf.distribute.experimental.CommunicationImplementation.RING,
            bytes_per_pack=32 * 2**20,
        )
    )
    keras.utils.set_random_seed(1)
    tf.config.experimental.enable_op_determinism()
    rank = int(os.environ.get("PEDL_RANK", "0"))
    with strategy.scope():
        model = _conv_model() if job["model"].startswith("conv") else _digits_model()
    x, y = _data(job["model"])
    batch = MODELS[job["model"]]["global_batch_size"]
    dataset = (
        tf.data.Dataset.from_tensor_slices((x, y))
        .repeat()
        .batch(batch)
        .map(lambda a, b: (a[rank::size], b[rank::size]))
        .prefetch(2)
    )

    @tf.function
    def step(data: Any) -> Any:
        logs = strategy.run(model.train_step, args=(data,))
        return {k: strategy.reduce("MEAN", v, axis=None) for k, v in logs.items()}

    iterator = iter(dataset)
    for index in range(job["batches"]):
        logs = step(next(iterator))
        float(logs["loss"])
        if (index + 1) % CHUNK == 0:
            times.append((index + 1, time.perf_counter()))


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--worker")
    parser.add_argument("--batches", type=int, default=120)
    parser.add_argument("--warmup", type=int, default=20)
    parser.add_argument("--min-rounds", type=int, default=6)
    parser.add_argument("--max-rounds", type=int, default=12)
    parser.add_argument("--rel-halfwidth", type=float, default=0.05)
    parser.add_argument("--repeats", type=int, default=None, help="exactly this many rounds")
    parser.add_argument("--models", default="digits,conv,conv128")
    args = parser.parse_args()
    if args.worker:
        _worker(json.loads(args.worker))
        return
    if args.repeats is not None:
        args.min_rounds = args.max_rounds = args.repeats
    models = args.models.split(",")
    rows: list[dict[str, Any]] = []
    results: dict[tuple[str, str, int], list[float]] = {}
    steps: dict[tuple[str, str, int], list[float]] = {}

    def round_(index: int) -> dict[str, float]:
        """Every model and setup once; each one's ratio of 2 workers to 1 in this round."""
        order = [(m, mode, n) for m in models for mode in SETUPS for n in (1, 2)]
        this: dict[tuple[str, str, int], float] = {}
        for model, mode, size in order if index % 2 == 0 else order[::-1]:
            r = measure(mode, model, size, args.batches, args.warmup)
            print(json.dumps({"round": index, **r}), flush=True)
            rows.append(r)
            this[(mode, model, size)] = r["samples_per_s"]
            results.setdefault((mode, model, size), []).append(r["samples_per_s"])
            steps.setdefault((mode, model, size), []).append(r["median_step_ms"])
        return {
            f"{model} {mode} 2/1": this[(mode, model, 2)] / this[(mode, model, 1)]
            for model in models
            for mode in SETUPS
        }

    repeated = _env.repeat_until_narrow(
        round_,
        min_reps=args.min_rounds,
        max_reps=args.max_rounds,
        rel_halfwidth=args.rel_halfwidth,
    )
    loads = _env.load_range(rows)
    machine = rows[0]["machine"]
    print(
        f"\n{machine['vcpus']} vCPUs ({machine['cpu']}), load average {loads[0]:.1f}-"
        f"{loads[1]:.1f} during the run, commit {machine['commit']}, {repeated.reps} rounds, "
        f"every interval within ±{args.rel_halfwidth:.0%}: {repeated.narrow}"
    )
    print(
        "\n| model | setup | 1 worker samples/s | 2 workers samples/s | 2 ÷ 1 per round: "
        "median (~95% interval) | step 1w ms |"
    )
    print("| --- | --- | --- | --- | --- | --- |")
    for model in models:
        for mode in SETUPS:
            one = statistics.median(results[(mode, model, 1)])
            two = statistics.median(results[(mode, model, 2)])
            step = statistics.median(steps[(mode, model, 1)])
            ratio = repeated.intervals[f"{model} {mode} 2/1"]
            setup = "PEDL" if mode == "pedl" else "plain loop"
            print(
                f"| {model} | {setup} | {one:.0f} | {two:.0f} | {ratio.median:.2f}x "
                f"({ratio.low:.2f}-{ratio.high:.2f}, {ratio.coverage:.0%}) | {step:.1f} |"
            )
    summary = {
        "benchmark": "p7 2 workers / 1, pedl beside a plain MultiWorkerMirroredStrategy loop",
        **repeated.as_dict(),
        "loadavg_1m_range": loads,
        "machine": machine,
    }
    print(json.dumps(summary))


if __name__ == "__main__":
    main()
