"""``/api/v1/trials/{id}/...``: the trial process's line to the orchestrator.

Start info, searcher operations, completions, early exits and preemption require the trial's
bearer token; ``scheduling`` and ``kill`` are for signed-in users (``kill``: the experiment's
owner or an administrator). On a master without an orchestrator (an
API-only app) the orchestrator routes answer 409.

A trial's token lives as long as the attempt it was issued to (see
:mod:`pedl.db.trials`): once the process has exited, or the trial has ended, its
routes answer 401; a trial that has ended answers 409 whatever token is presented, where the
route reads the trial anyway. The length a trial is told to train to bounds the batch counts
of its later metric rows and checkpoints (:meth:`~pedl.db.MetricIngestor.limit_batches`).
"""

from __future__ import annotations

import math

from fastapi import APIRouter, Request

from pedl.db import MetricIngestor
from pedl.db import experiments as experiments_repo
from pedl.db import trials as trials_repo
from pedl.db.metrics import MAX_METRIC_MAGNITUDE
from pedl.master.api._auth import (
    OWNER_RESPONSES,
    USER_AUTH_RESPONSES,
    CurrentUser,
    TrialAuth,
    require_owner,
    require_user,
)
from pedl.master.api._deps import ReadSession, TrialId
from pedl.master.api._errors import AUTH_RESPONSES, ERROR_RESPONSES, ApiError
from pedl.master.api._schemas import (
    PreemptPublic,
    SearcherCompleted,
    SearcherOperationPublic,
    TrialExit,
    TrialPublic,
    TrialSchedulingPublic,
    TrialStartInfo,
)
from pedl.master.orchestrator import Orchestrator
from pedl.vocabulary import TrialError

router = APIRouter(prefix="/trials", tags=["trial operations"], responses=ERROR_RESPONSES)

LONG_POLL_SECONDS = 5.0


def _orchestrator(request: Request) -> Orchestrator:
    orchestrator = getattr(request.app.state, "orchestrator", None)
    if not isinstance(orchestrator, Orchestrator):
        raise ApiError(409, "this master runs no orchestrator (API-only mode)")
    return orchestrator


@router.get("/{trial_id}/start", responses=AUTH_RESPONSES)
def get_trial_start(trial_id: TrialId, auth: TrialAuth, session: ReadSession) -> TrialStartInfo:
    """What the trial process needs to start: hparams, seed, config, latest checkpoint (409
    once the trial has ended)."""
    trial = trials_repo.get_live_trial(session, trial_id)
    experiment = experiments_repo.get_experiment(session, trial.experiment_id)
    return TrialStartInfo(
        trial_id=trial.id,
        experiment_id=trial.experiment_id,
        request_id=trial.request_id,
        hparams=trial.hparams,
        seed=trial.seed,
        latest_checkpoint=trial.latest_checkpoint_uuid,
        warm_start_checkpoint=trial.warm_start_checkpoint_uuid,
        config=experiment.config,
    )


@router.get("/{trial_id}/searcher/operation", responses=AUTH_RESPONSES)
def get_searcher_operation(
    trial_id: TrialId, auth: TrialAuth, request: Request
) -> SearcherOperationPublic:
    """The trial's next operation (long-polls up to 5 s while there is none yet). Its
    length, in batches, bounds the trial's metric rows and checkpoints from now on."""
    orchestrator = _orchestrator(request)
    answer = orchestrator.next_operation(trial_id, LONG_POLL_SECONDS)
    ingestor = getattr(request.app.state, "metric_ingestor", None)
    if answer.length is not None and isinstance(ingestor, MetricIngestor):
        batches = orchestrator.length_in_batches(trial_id, answer.length)
        if batches is not None:
            ingestor.limit_batches(trial_id, batches)
    return SearcherOperationPublic(status=answer.status, length=answer.length)


@router.post("/{trial_id}/searcher/completed", status_code=204, responses=AUTH_RESPONSES)
def complete_searcher_operation(
    trial_id: TrialId, auth: TrialAuth, body: SearcherCompleted, request: Request
) -> None:
    """The trial trained to ``length`` and validated; the searcher hears it once per length.
    409 for a length past the largest the searcher asked of the trial (``length``); 422 for
    a finite metric beyond ±1e300 (``metric``, the bound of metric rows)."""
    metric = math.nan if body.metric is None else body.metric
    if math.isfinite(metric) and abs(metric) > MAX_METRIC_MAGNITUDE:
        raise ApiError(
            422,
            f"the searcher metric is {metric!r}: it must lie within ±{MAX_METRIC_MAGNITUDE:g}",
            field="metric",
        )
    orchestrator = _orchestrator(request)
    asked = orchestrator.asked_length(trial_id)
    if asked is not None and body.length > asked:
        raise ApiError(
            409,
            f"trial {trial_id} was asked to train to {asked}, not {body.length}",
            field="length",
        )
    orchestrator.complete_operation(trial_id, body.length, metric)


@router.post("/{trial_id}/exit", status_code=204, responses=AUTH_RESPONSES)
def report_trial_exit(
    trial_id: TrialId, auth: TrialAuth, body: TrialExit, request: Request
) -> None:
    """How the trial process's run ended (completed, stopped early, invalid hyperparameters,
    errored with its error, preempted); acted upon once the process has exited."""
    error = TrialError.from_dict(body.error.model_dump()) if body.error else None
    _orchestrator(request).report_exit(trial_id, body.outcome, error)


@router.get("/{trial_id}/preempt", responses=AUTH_RESPONSES)
def get_preempt(trial_id: TrialId, auth: TrialAuth, request: Request) -> PreemptPublic:
    """Whether the trial should checkpoint and exit now (pause, cancel, kill)."""
    return PreemptPublic(preempt=_orchestrator(request).should_preempt(trial_id))


@router.get("/{trial_id}/scheduling", dependencies=[require_user], responses=USER_AUTH_RESPONSES)
def get_trial_scheduling(
    trial_id: TrialId, session: ReadSession, request: Request
) -> TrialSchedulingPublic:
    """The trial's state and, while it waits for slots, why."""
    trial = trials_repo.get_trial(session, trial_id)
    orchestrator = getattr(request.app.state, "orchestrator", None)
    reason = orchestrator.queue_reason(trial_id) if isinstance(orchestrator, Orchestrator) else None
    return TrialSchedulingPublic(trial_id=trial.id, state=trial.state, queue_reason=reason)


@router.post("/{trial_id}/kill", status_code=202, responses=OWNER_RESPONSES)
def kill_trial(
    trial_id: TrialId, request: Request, session: ReadSession, user: CurrentUser
) -> TrialPublic:
    """Kill one trial now; the rest of its experiment goes on. 409 if it already ended. The
    experiment's owner or an administrator only (403)."""
    trial = trials_repo.get_trial(session, trial_id)
    owner = experiments_repo.get_experiment(session, trial.experiment_id).owner
    require_owner(user, owner, f"trial {trial_id} of experiment {trial.experiment_id}")
    if trial.state.is_terminal:
        raise ApiError(409, f"trial {trial_id} already ended ({trial.state.value})", field="state")
    _orchestrator(request).kill_trial(trial_id)
    return TrialPublic.model_validate(trial)
