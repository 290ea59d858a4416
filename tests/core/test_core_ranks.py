"""The core context's parts know the rank (issue 20, item 3): with several workers only the
chief reports metrics, stores checkpoints and completes searcher operations; the chief's
searcher lengths and preemption answers reach every worker. Real processes, real sockets."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest

from pedl import core
from pedl.config import parse_config
from pedl.storage import SharedFSStorage
from tests.core.test_distributed import free_ports, run_workers

CONFIG = """
hyperparameters: {global_batch_size: 4}
searcher: {name: single, metric: val_loss, max_length: {batches: 30}}
"""


def trial_parts(arg: dict[str, Any], _ready: Any) -> dict[str, Any]:
    """One worker's walk through the core parts; what it saw and what reached its backends."""
    distributed = core.DistributedContext.from_env(arg["env"])
    rank = distributed.rank
    answers = iter([False, True] if rank == 0 else [True, False])
    # Each worker's own backend: only the chief's must be used.
    recorder = core.MemoryBackend(
        [10, 20, 30] if rank == 0 else [99], preempt=lambda: next(answers)
    )
    info = core.TrialInfo(
        trial_id=1,
        experiment_id=1,
        hparams={},
        trial_seed=0,
        config=parse_config(CONFIG),
        code_dir=Path(arg["dir"]),
    )
    context = core.build_context(
        info,
        backend=recorder,
        storage=SharedFSStorage(Path(arg["dir"]) / "checkpoints"),
        distributed=distributed,
    )
    lengths = []
    preempt = []
    for op in context.searcher.operations():
        lengths.append(op.length)
        context.train.report_training_metrics(op.length, {"loss": float(rank)})
        if rank == 0:
            op.report_completed(0.5)
            with context.checkpoint.store_path({"steps_completed": op.length}) as (path, _):
                (path / "f").write_text("x")
        if op.length == 10:
            preempt = [context.preempt.should_preempt(), context.preempt.should_preempt()]
    refused = ""
    if rank != 0:
        try:
            with context.checkpoint.store_path({"steps_completed": 1}):
                pass
        except RuntimeError as err:
            refused = str(err)
    distributed.close()
    return {
        "lengths": lengths,
        "preempt": preempt,
        "writes": recorder.writes,
        "checkpoints": [b for _, b in recorder.checkpoints],
        "completed": recorder.completed,
        "refused": refused,
    }


@pytest.mark.parametrize("size", [2, 3])
def test_the_chief_decides_and_reports_for_every_worker(tmp_path: Path, size: int) -> None:
    pub, pull = free_ports(2)
    args = [
        {
            "rank": rank,
            "dir": str(tmp_path),
            "env": core.DistributedContext(
                rank=rank,
                size=size,
                local_rank=rank,
                local_size=size,
                pub_port=pub,
                pull_port=pull,
                timeout=30,
            ).to_env(),
        }
        for rank in range(size)
    ]
    results = run_workers(trial_parts, args)
    assert sorted(results) == list(range(size))
    for rank, (status, got, _) in results.items():
        assert status == "ok", (rank, got)
        assert got["lengths"] == [10, 20, 30]  # the chief's searcher, on every worker
        assert got["preempt"] == [False, True]  # the chief's answers
        if rank == 0:
            assert [b for _, b in got["writes"]] == [10, 20, 30]
            assert got["checkpoints"] == [10, 20, 30]
            assert got["completed"] == [(10, 0.5), (20, 0.5), (30, 0.5)]
        else:
            assert got["writes"] == got["checkpoints"] == got["completed"] == []
            assert "only the chief" in got["refused"]
