"""``/api/v1/trials/{id}/system-metrics``: the CPU, memory, disk, network and GPU use each
process of a trial samples (:mod:`pedl.exec._system_metrics`), written by the trial in
batches and read by users, downsampled for long trials."""

from __future__ import annotations

from typing import Annotated

import anyio.to_thread
from fastapi import APIRouter, Query

from pedl.db import system_metrics as system_repo
from pedl.db import trials as trials_repo
from pedl.db.system_metrics import SystemSample
from pedl.master.api._auth import USER_AUTH_RESPONSES, TrialAuth, require_user
from pedl.master.api._deps import DatabaseDep, TrialId, WriteSession
from pedl.master.api._errors import AUTH_RESPONSES, ERROR_RESPONSES
from pedl.master.api._schemas import (
    MAX_RANK,
    SystemMetricsBatch,
    SystemMetricsIngested,
    SystemMetricsPublic,
    SystemSamplePublic,
)

router = APIRouter(prefix="/trials", tags=["trials"], responses=ERROR_RESPONSES)

DEFAULT_MAX_POINTS = 1000
MAX_POINTS = 10_000


@router.post("/{trial_id}/system-metrics", responses=AUTH_RESPONSES)
def report_system_metrics(
    trial_id: TrialId, auth: TrialAuth, body: SystemMetricsBatch, session: WriteSession
) -> SystemMetricsIngested:
    """Store a batch of one worker's samples; samples already stored (same rank and time)
    are skipped (safe re-send). 409 once the trial has ended."""
    trials_repo.get_live_trial(session, trial_id)
    samples = [
        SystemSample(rank=body.rank, sampled_at=sample.time, metrics=dict(sample.metrics))
        for sample in body.samples
    ]
    inserted = system_repo.insert_samples(session, trial_id, samples)
    return SystemMetricsIngested(trial_id=trial_id, received=len(samples), inserted=inserted)


@router.get(
    "/{trial_id}/system-metrics", dependencies=[require_user], responses=USER_AUTH_RESPONSES
)
async def get_system_metrics(
    trial_id: TrialId,
    database: DatabaseDep,
    rank: Annotated[
        int | None, Query(ge=0, le=MAX_RANK, description="Only this worker's samples.")
    ] = None,
    max_points: Annotated[
        int,
        Query(ge=1, le=MAX_POINTS, description="At most this many samples per worker."),
    ] = DEFAULT_MAX_POINTS,
) -> SystemMetricsPublic:
    """A trial's system metrics by worker and time (Determined's ``system`` metrics group);
    a worker with more than ``max_points`` samples is downsampled to ``max_points`` of them,
    evenly spread (404 for an unknown trial)."""

    def read() -> SystemMetricsPublic:
        with database.session() as session:
            trials_repo.get_trial(session, trial_id)
            total = system_repo.count_samples(session, trial_id, rank=rank)
            samples = system_repo.read_samples(session, trial_id, max_points=max_points, rank=rank)
        return SystemMetricsPublic(
            trial_id=trial_id,
            total=total,
            downsampled=len(samples) < total,
            samples=[
                SystemSamplePublic(rank=s.rank, time=s.sampled_at, metrics=s.metrics)
                for s in samples
            ],
        )

    return await anyio.to_thread.run_sync(read)
