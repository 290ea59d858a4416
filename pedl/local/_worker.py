"""A worker of a local run's multi-worker trial: ``python -m pedl.local.worker``, one process
per rank (the chief, rank 0, too: every attempt starts all N ranks fresh, as on a master,
since TensorFlow sets a process's collectives up once), started by :class:`pedl.exec.Gang`.

Each runs the attempt (:func:`pedl.exec.run_attempt`) on a context whose distributed part is
the trial's (``DistributedContext.from_env()``); what it needs of the trial comes in
``PEDL_LOCAL_TRIAL`` (JSON: the trial's ids, hyperparameters, seed, checkpoints, code
directory and config). The chief's metric reports, checkpoint registrations, searcher calls
and preemption checks, and at its end the attempt's result, go to the run's process, which
keeps the record, over the link :mod:`pedl.local._chief_link` (named in its environment);
the other ranks take the chief's answers (searcher lengths, preemption) through the core
parts and need no access to the record. Each beats its heartbeat and exits when the run's
process (``PEDL_MASTER_PID``) dies.
"""

from __future__ import annotations

import json
import os
import sys
import traceback
from collections.abc import Mapping
from pathlib import Path
from typing import Any

from pedl import core
from pedl.config import parse_config
from pedl.exec import EXIT_ERROR, EXIT_OK, die_with_master, run_attempt, start_heartbeat
from pedl.local._chief_link import ChiefBackend
from pedl.storage import make_storage
from pedl.vocabulary import MetricKind, TrialOutcome

TRIAL_ENV = "PEDL_LOCAL_TRIAL"
"""The variable holding the trial's description (JSON) for a local run's worker."""


def trial_description(info: core.TrialInfo, config: Mapping[str, Any]) -> str:
    """The ``PEDL_LOCAL_TRIAL`` value of a trial (``config``: the experiment's, as a dict)."""
    return json.dumps(
        {
            "trial_id": info.trial_id,
            "experiment_id": info.experiment_id,
            "hparams": info.hparams,
            "seed": info.trial_seed,
            "code_dir": str(info.code_dir),
            "latest_checkpoint": info.latest_checkpoint,
            "warm_start_checkpoint": info.warm_start_checkpoint,
            "extra": info.extra,
            "config": dict(config),
        }
    )


class _NotChief:
    """The backend of a rank other than the chief: the core parts call none of its reports or
    searcher calls there (they take the chief's answers), so each raises; nothing asks such
    a rank's platform to stop (the chief's answer is broadcast)."""

    def write_metrics(
        self,
        kind: MetricKind,
        total_batches: int,
        metrics: Mapping[str, float],
        total_epochs: float | None = None,
    ) -> None:
        raise RuntimeError("only the chief of a local multi-worker trial reports metrics")

    def register_checkpoint(
        self,
        storage_id: str,
        total_batches: int,
        metadata: Mapping[str, Any],
        resources: Mapping[str, int],
    ) -> None:
        raise RuntimeError("only the chief of a local multi-worker trial registers checkpoints")

    def next_length(self) -> int | None:
        raise RuntimeError("only the chief of a local multi-worker trial asks the searcher")

    def complete(self, length: int, searcher_metric: float) -> None:
        raise RuntimeError("only the chief of a local multi-worker trial reports to the searcher")

    def should_preempt(self) -> bool:
        return False


def run_local_worker() -> int:
    """Run this process's rank of the trial ``PEDL_LOCAL_TRIAL`` describes; 0 unless the
    attempt errored."""
    start_heartbeat()
    master_pid = os.environ.get("PEDL_MASTER_PID")
    if master_pid:
        die_with_master(int(master_pid))
    described = json.loads(os.environ.pop(TRIAL_ENV))
    config = parse_config(described["config"])
    code_dir = Path(described["code_dir"])
    info = core.TrialInfo(
        trial_id=int(described["trial_id"]),
        experiment_id=int(described["experiment_id"]),
        hparams=dict(described["hparams"]),
        trial_seed=int(described["seed"]),
        config=config,
        code_dir=code_dir,
        latest_checkpoint=described["latest_checkpoint"],
        warm_start_checkpoint=described["warm_start_checkpoint"],
        extra=dict(described["extra"]),
    )
    link = ChiefBackend.connect()  # the chief's line to the run's record; None elsewhere
    backend: core.TrialBackend = link if link is not None else _NotChief()
    distributed = core.DistributedContext.from_env()
    try:
        result = run_attempt(
            code_dir,
            config.entrypoint,
            lambda: core.build_context(
                info,
                backend=backend,
                storage=make_storage(config.checkpoint_storage),
                distributed=distributed,
            ),
        )
        if link is not None:
            link.report_result(result)
    finally:
        distributed.close()
        if link is not None:
            link.close()
    if result.outcome is TrialOutcome.ERRORED:
        error = result.error
        print(error.traceback if error and error.traceback else error, file=sys.stderr)
        return EXIT_ERROR
    return EXIT_OK


def main() -> None:
    try:
        raise SystemExit(run_local_worker())
    except SystemExit:
        raise
    except BaseException:
        traceback.print_exc()
        raise SystemExit(EXIT_ERROR) from None
