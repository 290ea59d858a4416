"""P7's step taken apart (issue 38, item 1): where a 2-worker step of P7's conv nets goes.

Run by hand, never by the test suite::

    .venv/bin/python bench/p7_breakdown.py [--rounds 2] [--models conv,conv128]
        [--setups full:1,half:1,alone:2,allreduce:2,mwms:2] [--steps 200]

Each setup runs P7's model (``p7_distributed._conv_model``) in fresh worker processes, one
TensorFlow thread each (intra- and inter-op), on one constant batch (no input pipeline), and
times ``--steps`` steps after 20 untimed ones:

- ``full:1``: one worker, Keras's ``train_step`` (as a ``tf.function``) on the global batch;
- ``half:1``: one worker, half the global batch (the compute a worker of two has);
- ``alone:2``: two workers at once, each half the batch, no collective (the compute of two
  workers beside each other on the machine's cores);
- ``allreduce:2``: two workers under ``MultiWorkerMirroredStrategy`` (ring, packed as PEDL
  packs), one all-reduce of tensors shaped as the model's gradients and nothing else;
- ``mwms:2``: ``strategy.run(model.train_step)``, the whole step; ``mwms:1``, the same on one
  worker (half the batch, as every setup but ``full:1``): the strategy's own cost beside
  ``half:1``;
- ``host:2``: the model's ``train_step`` on two workers without a strategy, the gradients
  averaged through shared memory (``pedl.keras._host_allreduce``, PEDL's path where every
  worker is on one machine).

Prints one JSON line per setup: rank 0's median and mean step, and for two workers the mean
of the slower of the two workers' i-th steps (what a step in lock-step would wait for) and
rank 0's 90th percentile; then the machine and load average (``bench/_env.py``).
"""

from __future__ import annotations

import argparse
import json
import statistics
import subprocess
import sys
import time
from typing import Any

import _env
from p7_distributed import _environments, _free_ports, one_thread_environment


def _worker(setup: str, model_name: str, size: int, steps: int) -> None:
    import keras
    import tensorflow as tf
    from p7_distributed import MODELS, _conv_data, _conv_model

    global_batch = MODELS[model_name]["global_batch_size"]
    x, y = _conv_data(1024, 0)
    strategy = None
    if setup in ("mwms", "allreduce"):
        strategy = tf.distribute.MultiWorkerMirroredStrategy(
            communication_options=tf.distribute.experimental.CommunicationOptions(
                implementation=tf.distribute.experimental.CommunicationImplementation.RING,
                bytes_per_pack=32 * 2**20,
            )
        )
        with strategy.scope():
            model = _conv_model()
    else:
        model = _conv_model()
    if setup == "host":
        from pedl import core
        from pedl.keras._host_allreduce import HostAllReduce, average_before_applying

        capacity = sum(int(v.numpy().size) for v in model.trainable_variables)
        allreduce = HostAllReduce(core.DistributedContext.from_env(), capacity)
        average_before_applying(model.optimizer, allreduce)
    keras.utils.set_random_seed(1)
    per_worker = global_batch if setup == "full" else global_batch // max(size, 2)
    batch = (tf.constant(x[:per_worker]), tf.constant(y[:per_worker]))

    if setup == "mwms":
        assert strategy is not None

        @tf.function
        def step(b: Any) -> Any:
            return strategy.run(model.train_step, args=(b,))

    elif setup == "allreduce":
        assert strategy is not None
        grads = [tf.zeros_like(v) for v in model.trainable_variables]

        @tf.function
        def step(b: Any) -> Any:
            def reduce() -> Any:
                return tf.distribute.get_replica_context().all_reduce("SUM", grads)

            return strategy.run(reduce)

    else:

        @tf.function
        def step(b: Any) -> Any:
            return model.train_step(b)

    for _ in range(20):
        step(batch)
    times = []
    for _ in range(steps):
        t = time.perf_counter()
        step(batch)
        times.append(time.perf_counter() - t)
    print(json.dumps(times), flush=True)


def measure(setup: str, model_name: str, size: int, steps: int) -> dict[str, Any]:
    load = _env.Load.start()
    tf_ports = _free_ports(size)
    contexts = _environments(size) if setup == "host" else [{}] * size
    procs = []
    for rank in range(size):
        env = one_thread_environment()
        if setup in ("mwms", "allreduce"):
            workers = [f"127.0.0.1:{p}" for p in tf_ports]
            env["TF_CONFIG"] = json.dumps(
                {"cluster": {"worker": workers}, "task": {"type": "worker", "index": rank}}
            )
        env |= contexts[rank]  # "host": the distributed context's variables (TF_CONFIG unused)
        args = [sys.executable, __file__, "--worker", setup, model_name, str(size), str(steps)]
        procs.append(subprocess.Popen(args, env=env, stdout=subprocess.PIPE, text=True))
    outs = []
    for p in procs:
        out = p.communicate(timeout=900)[0]
        if p.returncode:
            raise RuntimeError(f"{setup}:{size} {model_name} failed")
        outs.append(json.loads(out.strip().splitlines()[-1]))
    load.stop()
    own = outs[0]
    result: dict[str, Any] = {
        "setup": setup,
        "model": model_name,
        "workers": size,
        "median_ms": round(1000 * statistics.median(own), 2),
        "mean_ms": round(1000 * statistics.mean(own), 2),
    }
    if size == 2:
        slower = [max(a, b) for a, b in zip(*outs, strict=True)]
        result["mean_of_slower_ms"] = round(1000 * statistics.mean(slower), 2)
        result["p90_ms"] = round(1000 * sorted(own)[int(0.9 * len(own))], 2)
    return result | load.as_dict() | {"machine": _env.machine()}


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--worker", nargs=4, metavar=("SETUP", "MODEL", "SIZE", "STEPS"))
    parser.add_argument("--rounds", type=int, default=2)
    parser.add_argument("--models", default="conv,conv128")
    parser.add_argument("--setups", default="full:1,half:1,alone:2,allreduce:2,mwms:2,host:2")
    parser.add_argument("--steps", type=int, default=200)
    args = parser.parse_args()
    if args.worker:
        setup, model_name, size, steps = args.worker
        _worker(setup, model_name, int(size), int(steps))
        return
    setups = [(s, int(n)) for s, n in (item.split(":") for item in args.setups.split(","))]
    for _ in range(args.rounds):
        for model_name in args.models.split(","):
            for setup, size in setups:
                print(json.dumps(measure(setup, model_name, size, args.steps)), flush=True)


if __name__ == "__main__":
    main()
