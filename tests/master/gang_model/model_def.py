"""A framework-free multi-worker trial for the launcher's tests (no TensorFlow import).

Every worker runs the same steps through the core context: the searcher's operations and
preemption asked in step (the chief's answers broadcast), one ``allgather`` per batch (so
the workers stay in lockstep and a worker that vanishes stops the others' collectives), a
checkpoint every ``period`` batches written by the chief, restored by every worker. Each
worker prints one ``gang-worker`` line with what its launcher gave it, and the chief's state
file records every (rank, batch) so the tests can see the workers trained together.
"""

from __future__ import annotations

import json
import os
import time
from typing import Any

import pedl
from pedl.vocabulary import TrialOutcome


class GangController:
    progressed = False

    def __init__(self, context: Any) -> None:
        self.context = context

    @classmethod
    def from_definition(cls, definition: Any, context: Any) -> GangController:
        return cls(context)

    def run(self) -> TrialOutcome:
        ctx = self.context
        dist = ctx.distributed
        hparams = ctx.info.hparams
        period = int(hparams.get("period", 5))
        step = float(hparams.get("step_seconds", 0.05))
        rank = dist.get_rank()
        ranks = dist.allgather(rank)
        tf_config = json.loads(os.environ.get("TF_CONFIG", "{}"))
        line = {
            "rank": rank,
            "size": dist.get_size(),
            "local_rank": dist.get_local_rank(),
            "ranks": ranks,
            "pid": os.getpid(),
            "uid": os.getuid(),
            "tf_config": tf_config,
            "cuda": os.environ.get("CUDA_VISIBLE_DEVICES"),
            "pub_port": os.environ.get("PEDL_PUB_PORT"),
            "pull_port": os.environ.get("PEDL_PULL_PORT"),
            "heartbeat": "PEDL_HEARTBEAT_FD" in os.environ,
        }
        print("gang-worker " + json.dumps(line, sort_keys=True), flush=True)
        batches = 0
        latest = ctx.info.latest_checkpoint
        if latest:
            with ctx.checkpoint.restore_path(latest) as path:
                batches = int((path / "batches").read_text())
            print(f"rank {rank} restored batch {batches}", flush=True)
        for op in ctx.searcher.operations():
            while batches < op.length:
                time.sleep(step)
                together = dist.allgather(batches + 1)
                assert together == [batches + 1] * dist.get_size(), together
                batches += 1
                self.progressed = True
                if batches % period == 0:
                    ctx.train.report_training_metrics(batches, {"loss": 1.0 / batches})
                    if dist.is_chief:
                        with ctx.checkpoint.store_path({"steps_completed": batches}) as (path, _):
                            (path / "batches").write_text(str(batches))
                    dist.allgather(None)  # the checkpoint is stored before any worker goes on
                    if ctx.preempt.should_preempt():
                        return TrialOutcome.PREEMPTED
            ctx.train.report_validation_metrics(batches, {"val_loss": 1.0 / batches})
            if dist.is_chief:
                op.report_completed(1.0 / batches)
        print(f"rank {rank} done at batch {batches}", flush=True)
        return TrialOutcome.COMPLETED


class GangTrial(pedl.Trial):
    framework = "gang-test"
    trial_controller_class = GangController
