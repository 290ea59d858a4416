"""``/api/v1/cluster``: the slots, the trials that hold them and those waiting for them, why
nothing starts (if so), and the workers kept ready for trials: idle now, or exited by themselves."""

from __future__ import annotations

from datetime import UTC, datetime
from typing import Any

import anyio.to_thread
from fastapi import APIRouter, Request

from pedl.db import trials as trials_repo
from pedl.exec import describe_status
from pedl.master.api import agents
from pedl.master.api._auth import USER_AUTH_RESPONSES, require_user
from pedl.master.api._deps import DatabaseDep
from pedl.master.api._errors import ERROR_RESPONSES
from pedl.master.api._schemas import (
    ClusterPublic,
    IdleWorkerPublic,
    QueuedTrialPublic,
    RunningTrialPublic,
    WorkerExitPublic,
)
from pedl.master.api.trials import trial_workers
from pedl.master.orchestrator import Orchestrator
from pedl.vocabulary import TrialState

router = APIRouter(
    tags=["cluster"],
    responses={**ERROR_RESPONSES, **USER_AUTH_RESPONSES},
    dependencies=[require_user],
)
router.include_router(agents.router)  # /agents: the one agent and its slots


@router.get("/cluster")
async def get_cluster(database: DatabaseDep, request: Request) -> ClusterPublic:
    """The cluster's slots (0 on a master that runs no experiments), the RUNNING trials with
    the slots each holds (the config's ``resources.slots_per_trial``) and their worker
    processes (``GET /trials/{id}/workers``), the QUEUED ones with the scheduler's reason, by
    trial id; ``halted``: why no trial starts now (the master's own disk is full, its resource
    manager is unavailable, its agent is disabled), and ``worker_exits``: the warm and spare
    workers that exited by themselves while idle; ``idle_workers``: those idle now, each
    holding a slot."""
    orchestrator = getattr(request.app.state, "orchestrator", None)
    if not isinstance(orchestrator, Orchestrator):
        orchestrator = None

    def read() -> ClusterPublic:
        with database.session() as session:
            rows = trials_repo.scheduled_trials(session)
        running, queued = [], []
        for trial_id, experiment_id, state, config in rows:
            if state == TrialState.RUNNING:
                slots = _slots_per_trial(config)
                running.append(
                    RunningTrialPublic(
                        trial_id=trial_id,
                        experiment_id=experiment_id,
                        slots=slots,
                        workers=trial_workers(request, trial_id),
                    )
                )
            else:
                reason = orchestrator.queue_reason(trial_id) if orchestrator else None
                queued.append(
                    QueuedTrialPublic(trial_id=trial_id, experiment_id=experiment_id, reason=reason)
                )
        return ClusterPublic(
            slots_total=orchestrator.total_slots if orchestrator else 0,
            slots_used=sum(trial.slots for trial in running),
            running=running,
            queued=queued,
            halted=orchestrator.scheduling_halted() if orchestrator else None,
            worker_exits=[
                WorkerExitPublic(
                    pid=gone.pid,
                    exit=describe_status(gone.returncode),
                    spare=gone.spare,
                    experiment_id=gone.experiment_id,
                    trial_id=gone.trial_id,
                    at=datetime.fromtimestamp(gone.at, UTC),
                )
                for gone in (orchestrator.worker_exits() if orchestrator else [])
            ],
            idle_workers=[
                IdleWorkerPublic(
                    pid=idle.pid,
                    spare=idle.spare,
                    experiment_id=idle.experiment_id,
                    trial_id=idle.trial_id,
                    idle_since=datetime.fromtimestamp(idle.since, UTC),
                )
                for idle in (orchestrator.idle_workers() if orchestrator else [])
            ],
        )

    return await anyio.to_thread.run_sync(read)


def _slots_per_trial(config: dict[str, Any]) -> int:
    resources = config.get("resources")
    slots = resources.get("slots_per_trial") if isinstance(resources, dict) else None
    return slots if isinstance(slots, int) and not isinstance(slots, bool) else 1
