"""Continuing an ended experiment (``det experiment continue``): its records made live again
under a new config and a new searcher log, for the orchestrator to adopt and run."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

from sqlalchemy import delete
from sqlalchemy.orm import Session

from pedl.engine import ExperimentState, TrialState
from pedl.master.db._errors import ConflictError
from pedl.master.db._models import Experiment, SearcherEvent, SearcherSnapshot
from pedl.master.db.experiments import get_experiment
from pedl.master.db.searcher import append_searcher_events
from pedl.master.db.trials import all_trials


def continue_experiment(
    session: Session,
    experiment_id: int,
    *,
    config: Mapping[str, Any],
    events: Sequence[Mapping[str, Any]],
) -> Experiment:
    """Make the ended experiment ACTIVE again with ``config`` (the first submitted config,
    ``config_text``, stays) and ``events`` as its whole searcher log; its trials become ACTIVE
    with no restarts spent, each to resume from its latest checkpoint. Raises
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
    append_searcher_events(session, experiment_id, events)
    for trial in all_trials(session, experiment_id):
        trial.state = TrialState.ACTIVE
        trial.restarts = 0
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
