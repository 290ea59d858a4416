"""Running a trial's controller on N worker processes, as a launcher would start them.

:func:`worker_environments` builds each worker's environment the way issue 20's contract
says a launcher does (``DistributedContext(...).to_env()`` and a ``TF_CONFIG`` of free
ports on 127.0.0.1); :func:`run_workers` starts ``python -m tests.keras.multiworker`` once
per rank with a JSON job and collects each worker's result file. Each worker builds its
core context with ``DistributedContext.from_env()`` and the in-memory stand-ins of
:mod:`tests.keras.harness` (checkpoints in the shared directory of the job).
"""

from __future__ import annotations

import json
import os
import pickle
import subprocess
import sys
from pathlib import Path
from typing import Any

from pedl import core
from pedl.exec import free_ports
from tests.waits import scaled

ROOT = Path(__file__).resolve().parents[2]


def worker_environments(size: int, *, timeout: float = 120.0) -> list[dict[str, str]]:
    """Each rank's variables: the distributed context's and TF_CONFIG (free ports)."""
    pub, pull, *tf_ports = free_ports(2 + size)
    workers = [f"127.0.0.1:{port}" for port in tf_ports]
    envs = []
    for rank in range(size):
        context = core.DistributedContext(
            rank=rank,
            size=size,
            local_rank=rank,
            local_size=size,
            pub_port=pub,
            pull_port=pull,
            timeout=scaled(timeout),  # a loaded machine's collectives wait longer
        )
        env = context.to_env()
        env["TF_CONFIG"] = json.dumps(
            {"cluster": {"worker": workers}, "task": {"type": "worker", "index": rank}}
        )
        envs.append(env)
    return envs


def run_workers(
    job: dict[str, Any],
    directory: Path,
    size: int,
    *,
    timeout: float = 240,
    env: dict[str, str] | None = None,
) -> list[Any]:
    """Run ``job`` (see :func:`main`) on ``size`` worker processes, with ``env`` added to
    their environment; return their results by rank. A worker that fails fails the call
    with its output."""
    directory.mkdir(parents=True, exist_ok=True)
    job_file = directory / "job.json"
    job_file.write_text(json.dumps({**job, "directory": str(directory)}))
    procs = []
    for extra in worker_environments(size):
        full = {
            **os.environ,
            **extra,
            "CUDA_VISIBLE_DEVICES": "",
            "TF_CPP_MIN_LOG_LEVEL": "2",
            **(env or {}),
        }
        procs.append(
            subprocess.Popen(
                [sys.executable, "-m", "tests.keras.multiworker", str(job_file)],
                cwd=ROOT,
                env=full,
                stdout=subprocess.PIPE,
                stderr=subprocess.STDOUT,
            )
        )
    outputs = []
    try:
        for proc in procs:
            out, _ = proc.communicate(timeout=scaled(timeout))
            outputs.append(out.decode(errors="replace"))
    finally:
        for proc in procs:
            if proc.poll() is None:
                proc.kill()
                proc.wait()
    failed = [
        f"worker {rank} exited {proc.returncode}:\n{out[-6000:]}"
        for rank, (proc, out) in enumerate(zip(procs, outputs, strict=True))
        if proc.returncode != 0
    ]
    if failed:  # every failed worker's output: the first to fail is often not rank 0
        raise AssertionError("\n\n".join(failed))
    results = []
    for rank in range(size):
        with open(directory / f"result-{rank}.pkl", "rb") as f:
            results.append(pickle.load(f))
    return results


def main(job_file: str) -> None:
    """One worker: build the context from the environment, run the trial, write results.

    The job names a Trial class (``trial``: ``module:Class``) run by the Keras controller,
    or a model definition directory (``model_dir``, with its ``config`` file) run as the
    trial process runs one (``pedl.exec.run_attempt``)."""
    job = json.loads(Path(job_file).read_text())
    directory = Path(job["directory"])
    distributed = (
        core.DistributedContext.from_env()
        if int(os.environ.get("PEDL_SIZE", "1")) > 1
        else core.DistributedContext.single()
    )
    if "model_dir" in job:
        _run_model_definition(job, directory, distributed)
        return
    import importlib

    import numpy as np

    from pedl.keras import TFKerasTrialController
    from tests.keras.harness import BASE_CONFIG, make_run

    module, _, name = job["trial"].partition(":")
    trial_class = getattr(importlib.import_module(module), name)
    if "input_kind" in job:
        trial_class = type(name, (trial_class,), {"input_kind": job["input_kind"]})
    stop_at = job.get("preempt_after")
    controller: Any = None

    def preempt() -> bool:
        return stop_at is not None and controller.progress.batches >= stop_at

    run = make_run(
        directory,
        job.get("config", BASE_CONFIG),
        overrides=tuple(job.get("overrides", ())),
        hparams=job.get("hparams"),
        lengths=job.get("lengths"),
        latest_checkpoint=job.get("latest_checkpoint"),
        preempt=preempt,
        distributed=distributed,
    )
    controller = TFKerasTrialController(trial_class, run.context)
    batch_sizes: list[int] = []
    worker_batches = controller.train_data.worker_batches

    def counted(start: int) -> Any:
        for batch in worker_batches(start):
            batch_sizes.append(int(np.shape(batch[0])[0]))
            yield batch

    if distributed.size > 1:
        controller.train_data.worker_batches = counted
    outcome = controller.run()
    result = {
        "outcome": outcome.value,
        "rank": distributed.rank,
        "weights": [np.array(w) for w in controller.model.get_weights()],
        "variables": [np.array(v.numpy()) for v in controller.model.optimizer.variables],
        "metrics": run.recorder.metrics,
        "writes": run.recorder.writes,
        "checkpoints": run.recorder.checkpoints,
        "completed": run.session.completed,
        "batch_sizes": batch_sizes,
        "batches": controller.progress.batches,
        "strategy": controller.strategy is not None,
    }
    distributed.close()
    with open(directory / f"result-{distributed.rank}.pkl", "wb") as f:
        pickle.dump(result, f)


def _run_model_definition(
    job: dict[str, Any], directory: Path, distributed: core.DistributedContext
) -> None:
    import numpy as np

    from pedl.config import load_config
    from pedl.exec import run_attempt
    from pedl.storage import SharedFSStorage

    code_dir = Path(job["model_dir"])
    config = load_config(code_dir / job["config"])
    recorder = core.MemoryBackend([config.searcher.max_length.value])
    contexts: list[core.Context] = []

    def build_context() -> core.Context:
        info = core.TrialInfo(
            trial_id=1,
            experiment_id=1,
            hparams=dict(job["hparams"]),
            trial_seed=config.reproducibility.experiment_seed or 0,
            config=config,
            code_dir=code_dir,
        )
        context = core.build_context(
            info,
            backend=recorder,
            storage=SharedFSStorage(directory / "checkpoints"),
            distributed=distributed,
        )
        contexts.append(context)
        return context

    os.chdir(code_dir)
    result = run_attempt(code_dir, config.entrypoint, build_context)
    from pedl.keras._keras import keras

    models = [m for m in _live_models(keras.Model)]
    out = {
        "outcome": result.outcome.value,
        "error": result.error.traceback if result.error else None,
        "weights": [np.array(w) for w in models[-1].get_weights()] if models else [],
        "metrics": recorder.metrics,
        "writes": recorder.writes,
        "checkpoints": recorder.checkpoints,
        "completed": recorder.completed,
    }
    distributed.close()
    with open(directory / f"result-{distributed.rank}.pkl", "wb") as f:
        pickle.dump(out, f)


def _live_models(kind: type) -> list[Any]:
    import gc

    return [o for o in gc.get_objects() if isinstance(o, kind)]


if __name__ == "__main__":
    main(sys.argv[1])
