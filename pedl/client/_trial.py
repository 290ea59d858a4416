"""A trial: its record, logs, metrics and checkpoints."""

from __future__ import annotations

import time
from collections.abc import Iterator, Mapping
from datetime import datetime
from typing import Annotated, Any

from pydantic import BaseModel, BeforeValidator, ConfigDict

from pedl.client._checkpoint import Checkpoint, best_checkpoints, resolve_sort
from pedl.client._session import Session
from pedl.engine import TrialError, TrialOutcome, TrialState

TERMINAL_TRIAL_STATES = frozenset(s for s in TrialState if s.is_terminal)
"""Trial states nothing ever leaves."""

_NON_FINITE = {"NaN": float("nan"), "Infinity": float("inf"), "-Infinity": float("-inf")}


def _metric_value(value: Any) -> Any:
    if isinstance(value, str) and value in _NON_FINITE:
        return _NON_FINITE[value]
    return value


class LogLine(BaseModel):
    """One line of a trial's output; ``seq`` numbers the trial's lines across restarts."""

    model_config = ConfigDict(frozen=True, extra="ignore")

    seq: int
    message: str
    level: str | None = None
    stream: str | None = None
    timestamp: datetime | None = None


class MetricRow(BaseModel):
    """One training or validation report (``kind``) of a trial at ``total_batches``.

    Non-finite values come back as ``float`` NaN/inf (the API sends them as strings).
    """

    model_config = ConfigDict(frozen=True, extra="ignore")

    kind: str
    total_batches: int
    total_records: int | None = None
    total_epochs: float | None = None
    metrics: dict[str, Annotated[float | str | None, BeforeValidator(_metric_value)]]
    reported_at: datetime


class _TrialFields(BaseModel):
    model_config = ConfigDict(extra="ignore")

    id: int
    experiment_id: int
    request_id: str | None = None
    hparams: dict[str, Any]
    seed: int
    state: TrialState
    restarts: int
    total_batches: int
    latest_checkpoint_uuid: str | None = None
    best_checkpoint_uuid: str | None = None
    best_validation: float | None = None
    outcome: TrialOutcome | None = None
    error: dict[str, Any] | None = None
    created_at: datetime
    ended_at: datetime | None = None


class Trial:
    """A trial as the master last described it (see :meth:`reload`).

    Attributes mirror the API's ``TrialPublic``: ``id``, ``experiment_id``, ``hparams``,
    ``seed``, ``state``, ``restarts``, ``total_batches``, ``latest_checkpoint_uuid``,
    ``best_checkpoint_uuid``, ``best_validation``, ``created_at``, ``ended_at``; ``outcome``
    (how its latest run ended: :class:`pedl.engine.TrialOutcome`) and ``error`` (why it
    errored: :class:`pedl.engine.TrialError`, with type, message, user-code location and
    traceback), both ``None`` until a run ends.
    """

    def __init__(self, session: Session, data: Mapping[str, Any]) -> None:
        self._session = session
        self._update(data)

    def _update(self, data: Mapping[str, Any]) -> None:
        fields = _TrialFields.model_validate(data)
        self._record = dict(data)
        self.id = fields.id
        self.experiment_id = fields.experiment_id
        self.request_id = fields.request_id
        self.hparams = fields.hparams
        self.seed = fields.seed
        self.state = fields.state
        self.restarts = fields.restarts
        self.total_batches = fields.total_batches
        self.latest_checkpoint_uuid = fields.latest_checkpoint_uuid
        self.best_checkpoint_uuid = fields.best_checkpoint_uuid
        self.best_validation = fields.best_validation
        self.outcome = fields.outcome
        self.error = TrialError.from_dict(fields.error) if fields.error else None
        self.created_at = fields.created_at
        self.ended_at = fields.ended_at

    def __repr__(self) -> str:
        state = self.state.value
        return f"Trial(id={self.id}, experiment_id={self.experiment_id}, state={state!r})"

    def to_dict(self) -> dict[str, Any]:
        """The API's JSON record as last fetched."""
        return dict(self._record)

    @property
    def is_terminal(self) -> bool:
        """True once the trial has ended (COMPLETED, CANCELED or ERROR)."""
        return self.state in TERMINAL_TRIAL_STATES

    def reload(self) -> Trial:
        """Fetch the trial's current record from the master; returns ``self``."""
        self._update(self._session.get(f"/trials/{self.id}"))
        return self

    def kill(self) -> None:
        """Stop this trial at once; the rest of its experiment goes on.

        Raises :class:`NotFoundError` for an unknown trial and :class:`PEDLError` (409) for
        one that already ended.
        """
        self._update(self._session.post(f"/trials/{self.id}/kill"))

    def logs(
        self,
        *,
        follow: bool = False,
        after_seq: int | None = None,
        interval: float = 1.0,
        page_size: int = 1000,
    ) -> Iterator[LogLine]:
        """The trial's log lines in ``seq`` order, after ``after_seq`` when given.

        With ``follow``, keep polling every ``interval`` seconds for new lines and stop once
        the trial has ended and every line has been read.
        """
        cursor = after_seq
        while True:
            ended = follow and self.reload().is_terminal
            while True:
                params: dict[str, Any] = {"limit": page_size}
                if cursor is not None:
                    params["after_seq"] = cursor
                batch = [LogLine.model_validate(line) for line in self._get_logs(params)]
                yield from batch
                if batch:
                    cursor = batch[-1].seq
                if len(batch) < page_size:
                    break
            if not follow or ended:
                return
            time.sleep(interval)

    def _get_logs(self, params: Mapping[str, Any]) -> list[Any]:
        lines = self._session.get(f"/trials/{self.id}/logs", params=params)
        assert isinstance(lines, list)
        return lines

    def metrics(self, kind: str | None = None, *, page_size: int = 10_000) -> list[MetricRow]:
        """The trial's metric rows of ``kind`` (``"training"`` or ``"validation"``; default
        both), ordered by kind, then batches."""
        kinds = [kind] if kind is not None else ["training", "validation"]
        rows: list[MetricRow] = []
        for one in kinds:
            cursor: int | None = None
            while True:
                params: dict[str, Any] = {"kind": one, "limit": page_size}
                if cursor is not None:
                    params["after_batches"] = cursor
                batch = self._session.get(f"/trials/{self.id}/metrics", params=params)
                rows.extend(MetricRow.model_validate(row) for row in batch)
                if len(batch) < page_size:
                    break
                cursor = rows[-1].total_batches
        return rows

    def list_checkpoints(self, *, states: tuple[str, ...] = ()) -> list[Checkpoint]:
        """The trial's checkpoints, oldest first; only those in ``states`` when given."""
        params = {"state": list(states)} if states else None
        items = self._session.get_all(f"/trials/{self.id}/checkpoints", params=params)
        return [Checkpoint(self._session, item) for item in items]

    def top_checkpoint(
        self, *, sort_by: str | None = None, smaller_is_better: bool | None = None
    ) -> Checkpoint | None:
        """The trial's best completed checkpoint by validation metric ``sort_by``; ``None``
        when no checkpoint has a finite value of it.

        ``sort_by`` defaults to the experiment's searcher metric; ``smaller_is_better``
        defaults to the searcher's direction for that metric, and to true for any other.
        """
        metric, smaller = resolve_sort(
            self._session.get(f"/experiments/{self.experiment_id}"), sort_by, smaller_is_better
        )
        if metric is None:
            return None
        best = best_checkpoints(self.list_checkpoints(), metric, smaller, 1)
        return best[0] if best else None
