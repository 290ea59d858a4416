"""Continuing an ended experiment (``det experiment continue``): its records made live again
under a new config and an empty searcher log, for the orchestrator to adopt and run."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from sqlalchemy import delete
from sqlalchemy.orm import Session

from pedl.db._errors import ConflictError
from pedl.db._models import Experiment, SearcherEvent, SearcherSnapshot
from pedl.db.experiments import get_experiment
from pedl.db.trials import all_trials
from pedl.vocabulary import ExperimentState, TrialState


def continue_experiment(
    session: Session,
    experiment_id: int,
    *,
    config: Mapping[str, Any],
    rerun_completed: bool,
) -> Experiment:
    """Make the ended experiment ACTIVE again with ``config`` (the first submitted config,
    ``config_text``, stays) and an empty searcher log: the experiment driver starts its
    searcher afresh and meets the trials it has when the searcher creates their request ids
    again (see :mod:`pedl.engine._driver`'s *continuation*). Every trial's restarts go back to
    0. A COMPLETED trial stays COMPLETED (answered from its record) unless
    ``rerun_completed`` (the single searcher's one trial, which trains on to a longer
    ``max_length``); every other trial becomes ACTIVE, to train again from its latest
    checkpoint. ACTIVE, not its ended state, although its searcher may create it only later
    (a ``max_concurrent_trials`` limit): the engine runs an ACTIVE trial only once the
    searcher has asked it for a length, so it neither runs early nor holds a slot, while its
    latest checkpoint is kept from garbage collection (which keeps the latest checkpoint of
    every live trial) and the experiment is not taken for ended. Raises
    :class:`ConflictError` when the experiment has not ended (checked under its row lock),
    :class:`NotFoundError` for an unknown one."""
    experiment = get_experiment(session, experiment_id, for_update=True)
    if not experiment.state.is_terminal:
        raise ConflictError(
            f"experiment {experiment_id} is {experiment.state.value}: only an ended experiment "
            "can be continued (try again once it has ended)",
            field="state",
        )
    session.execute(delete(SearcherEvent).where(SearcherEvent.experiment_id == experiment_id))
    session.execute(delete(SearcherSnapshot).where(SearcherSnapshot.experiment_id == experiment_id))
    for trial in all_trials(session, experiment_id):
        trial.restarts = 0
        if trial.state == TrialState.COMPLETED and not rerun_completed:
            continue
        trial.state = TrialState.ACTIVE
        trial.ended_at = None
        trial.outcome = None
        trial.error = None
    experiment.config = dict(config)
    experiment.state = ExperimentState.ACTIVE
    experiment.ended_at = None
    experiment.error = None
    experiment.progress = 0.0
    session.flush()
    return experiment
