"""A Core API script's context on two workers (two threads with real DistributedContexts over
loopback, as two processes would have): as in Determined 0.38 only the chief reports, the chief
alone follows the searcher, and ``should_preempt()`` is a collective whose answer is the
chief's, so both workers stop at the same step once the searcher closes the trial."""

from __future__ import annotations

import threading
from collections.abc import Mapping
from pathlib import Path
from typing import Any

from pedl import core
from pedl.config import parse_config
from pedl.exec import free_ports
from pedl.script._core_api import CoreApiRun
from pedl.storage import SharedFSStorage
from pedl.vocabulary import MetricKind
from tests.waits import scaled

CONFIG = {
    "entrypoint": "python3 train.py",
    "searcher": {"name": "single", "metric": "x", "max_length": {"batches": 20}},
}


class Platform:
    """One worker's trial backend: what it was told and asked."""

    def __init__(self) -> None:
        self.writes: list[tuple[MetricKind, int, dict[str, float]]] = []
        self.completed: list[tuple[int, float]] = []
        self.asked = 0

    def write_metrics(
        self,
        kind: MetricKind,
        total_batches: int,
        metrics: Mapping[str, float],
        total_epochs: float | None = None,
    ) -> None:
        self.writes.append((kind, total_batches, dict(metrics)))

    def register_checkpoint(self, *args: Any) -> None:
        raise AssertionError("no checkpoint in this test")

    def next_length(self) -> int | None:
        self.asked += 1
        return 20 if not self.completed else None

    def complete(self, length: int, searcher_metric: float) -> None:
        self.completed.append((length, searcher_metric))

    def should_preempt(self) -> bool:
        return False


def test_only_the_chief_reports_and_both_workers_stop_at_its_answer(tmp_path: Path) -> None:
    pub, pull = free_ports(2)
    platforms = [Platform(), Platform()]
    answers: dict[int, list[tuple[int, bool]]] = {}
    errors: list[BaseException] = []

    def worker(rank: int) -> None:
        distributed = core.DistributedContext(
            rank=rank, size=2, local_rank=rank, local_size=2, pub_port=pub, pull_port=pull
        )
        info = core.TrialInfo(
            trial_id=1,
            experiment_id=1,
            hparams={},
            trial_seed=0,
            config=parse_config(CONFIG),
            code_dir=tmp_path,
        )
        platform = platforms[rank]
        context = core.build_context(
            info,
            backend=platform,
            storage=SharedFSStorage(tmp_path / "checkpoints"),
            distributed=distributed,
        )
        run = CoreApiRun(context)
        told: list[tuple[int, bool]] = []
        try:
            for steps in range(10, 60, 10):
                if rank == 0:  # 0.38's tutorial: only the chief reports
                    run.context.train.report_validation_metrics(steps, {"x": float(steps)})
                told.append((steps, run.context.preempt.should_preempt()))
                if told[-1][1]:
                    break
        except BaseException as err:
            errors.append(err)
        finally:
            distributed.close()
        answers[rank] = told

    threads = [threading.Thread(target=worker, args=(rank,)) for rank in (0, 1)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join(timeout=scaled(60))
    assert not errors, errors
    # The searcher closed the trial at 20 steps; the chief's answer reached the other worker.
    assert answers[0] == answers[1] == [(10, False), (20, True)]
    chief, other = platforms
    assert chief.completed == [(20, 20.0)]
    assert [(kind, steps) for kind, steps, _ in chief.writes] == [
        (MetricKind.VALIDATION, 10),
        (MetricKind.VALIDATION, 20),
    ]
    assert (other.writes, other.completed, other.asked) == ([], [], 0)
