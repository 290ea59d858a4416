"""Queries for what an experiment's search did over time: each trial's searcher-metric value
and when it ended (the optimization history), and when each attempt of each trial ran (the
timeline of trials over slots).

Attempts are not a table: the orchestrator writes a line to the trial's log (stream
``master``) when it starts a trial process and when that process exits, and those two lines
are an attempt's start and end (:data:`ATTEMPT_STARTED`, :data:`ATTEMPT_EXITED`).
"""

from __future__ import annotations

from datetime import datetime
from typing import NamedTuple

from sqlalchemy import or_, select
from sqlalchemy.orm import Session

from pedl.db._errors import NotFoundError
from pedl.db._models import Experiment, Trial, TrialLog
from pedl.vocabulary import TrialState

MASTER_STREAM = "master"
ATTEMPT_STARTED = "[master] starting the trial process"
"""How the orchestrator's log line for a new trial process begins."""
ATTEMPT_EXITED = "[master] the trial process exited"
"""How the orchestrator's log line for an exited trial process begins."""


class TrialOutcomeRow(NamedTuple):
    trial_id: int
    state: TrialState
    best_validation: float | None
    created_at: datetime
    ended_at: datetime | None


class AttemptSpan(NamedTuple):
    trial_id: int
    started_at: datetime
    ended_at: datetime | None
    """``None``: still running (no exit line yet, and the trial has not ended)."""


def _check_experiment(session: Session, experiment_id: int) -> None:
    if session.scalar(select(Experiment.id).where(Experiment.id == experiment_id)) is None:
        raise NotFoundError("experiment", experiment_id)


def trial_outcomes(session: Session, experiment_id: int) -> list[TrialOutcomeRow]:
    """Every trial of the experiment by id: state, best searcher-metric value, created and
    ended times. Raises :class:`NotFoundError` for an unknown experiment."""
    _check_experiment(session, experiment_id)
    query = (
        select(Trial.id, Trial.state, Trial.best_validation, Trial.created_at, Trial.ended_at)
        .where(Trial.experiment_id == experiment_id)
        .order_by(Trial.id)
    )
    return [TrialOutcomeRow(*row) for row in session.execute(query).all()]


def attempt_spans(session: Session, experiment_id: int) -> list[AttemptSpan]:
    """Every attempt of every trial of the experiment, by trial id then start: from the
    orchestrator's start and exit lines in the trials' logs. An attempt without an exit line
    ends when its trial ended (``None`` while the trial is not terminal); an exit line without
    a start (a log cut short) is ignored. Raises :class:`NotFoundError` for an unknown
    experiment."""
    _check_experiment(session, experiment_id)
    lines = (
        select(TrialLog.trial_id, TrialLog.timestamp, TrialLog.message)
        .join(Trial, Trial.id == TrialLog.trial_id)
        .where(
            Trial.experiment_id == experiment_id,
            TrialLog.stream == MASTER_STREAM,
            or_(
                TrialLog.message.startswith(ATTEMPT_STARTED, autoescape=True),
                TrialLog.message.startswith(ATTEMPT_EXITED, autoescape=True),
            ),
        )
        .order_by(TrialLog.trial_id, TrialLog.seq)
    )
    ended = dict(
        session.execute(
            select(Trial.id, Trial.ended_at).where(
                Trial.experiment_id == experiment_id,
                Trial.state.in_([s for s in TrialState if s.is_terminal]),
            )
        ).all()
    )
    spans: list[AttemptSpan] = []
    open_start: dict[int, datetime] = {}
    for trial_id, stamp, message in session.execute(lines).all():
        if stamp is None:
            continue
        if message.startswith(ATTEMPT_STARTED):
            if trial_id in open_start:  # a start without an exit: it ended when the next began
                spans.append(AttemptSpan(trial_id, open_start.pop(trial_id), stamp))
            open_start[trial_id] = stamp
        elif trial_id in open_start:
            spans.append(AttemptSpan(trial_id, open_start.pop(trial_id), stamp))
    for trial_id, started in open_start.items():
        spans.append(AttemptSpan(trial_id, started, ended.get(trial_id)))
    spans.sort(key=lambda span: (span.trial_id, span.started_at))
    return spans
