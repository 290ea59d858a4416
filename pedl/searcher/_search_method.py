"""The interface every search method implements, built-in or custom (Determined's names and
signatures: a Determined custom searcher runs once its import says ``pedl``)."""

from __future__ import annotations

import abc
import json
import pathlib
import uuid
from dataclasses import dataclass, field
from typing import Any

from pedl.searcher._exited_reason import ExitedReason
from pedl.searcher._operations import Operation

STATE_FILE = "state"
"""The file, in the directory given to :meth:`SearchMethod.save`, holding the searcher state."""

METHOD_STATE_FILE = "method_state.json"
"""The file built-in search methods keep their own state in (:meth:`save_method_state`)."""


@dataclass
class SearcherState:
    """What the runner knows of the search, passed to every event handler; read-only for
    search methods (keep your own state in your method).

    ``trials_created``/``trials_closed``: request ids of trials that exist / are closed;
    ``failures``: trials that exited early with an error; ``trial_progress``: each trial's
    progress from 0.0 to 1.0 (length validated ÷ ``max_length``, when the config has one);
    ``last_event_id``: how many events the runner has handled; ``experiment_completed``:
    the search has shut down.
    """

    failures: set[uuid.UUID] = field(default_factory=set)
    trial_progress: dict[uuid.UUID, float] = field(default_factory=dict)
    trials_closed: set[uuid.UUID] = field(default_factory=set)
    trials_created: set[uuid.UUID] = field(default_factory=set)
    last_event_id: int = 0
    experiment_completed: bool = False

    def to_dict(self) -> dict[str, Any]:
        """JSON data (Determined's key names)."""
        return {
            "failures": sorted(str(f) for f in self.failures),
            "trialProgress": {str(k): v for k, v in self.trial_progress.items()},
            "trialsClosed": sorted(str(t) for t in self.trials_closed),
            "trialsCreated": sorted(str(t) for t in self.trials_created),
            "lastEventId": self.last_event_id,
            "experimentCompleted": self.experiment_completed,
        }

    def from_dict(self, d: dict[str, Any]) -> None:
        """Load :meth:`to_dict`'s data into this state."""
        self.failures = {uuid.UUID(f) for f in d.get("failures", [])}
        progress = d.get("trialProgress", {})
        self.trial_progress = {uuid.UUID(k): float(v) for k, v in progress.items()}
        self.trials_closed = {uuid.UUID(t) for t in d.get("trialsClosed", [])}
        self.trials_created = {uuid.UUID(t) for t in d.get("trialsCreated", [])}
        self.last_event_id = int(d.get("lastEventId", 0))
        self.experiment_completed = bool(d.get("experimentCompleted", False))


class SearchMethod(abc.ABC):
    """A hyperparameter search algorithm: events in, operations out.

    Subclass it and override the event handlers; each returns the operations to carry out
    next (``Create``, ``ValidateAfter``, ``Close``, ``Progress``, ``Shutdown``), in order.

    Contract (what the runner guarantees and expects):

    - **Call order.** :meth:`initial_operations` once, first; then one handler per event, in
      the order the events happened, one at a time (no handler is re-entered: no locking is
      needed). Events only name request ids the method created. Every created trial is
      eventually closed: :meth:`on_trial_closed` follows :meth:`on_trial_exited_early` for
      the same trial, and may also come without a ``Close`` having been asked for.
    - **Operations** for one request id are carried out in the order returned: ``Create``,
      then ``ValidateAfter`` with increasing absolute lengths, then ``Close``. ``Shutdown``
      ends the search and is returned once.
    - **Restarts.** After a master restart the runner rebuilds the method by constructing it
      again and replaying every event in order; a method whose answers depend only on its
      constructor arguments and the events (randomness from a seeded ``random.Random``) is
      restored exactly. Request ids may differ between replays (``uuid.uuid4()``): the runner
      matches trials by the order of their ``Create`` operations. A custom method that keeps
      state the events do not determine saves it in :meth:`save_method_state` and reloads it
      in :meth:`load_method_state`.
    """

    @abc.abstractmethod
    def initial_operations(self, searcher_state: SearcherState) -> list[Operation]:
        """Return the operations that start the search (usually ``Create`` operations)."""

    @abc.abstractmethod
    def on_trial_created(
        self, searcher_state: SearcherState, request_id: uuid.UUID
    ) -> list[Operation]:
        """A ``Create`` was carried out: the trial exists."""

    @abc.abstractmethod
    def on_validation_completed(
        self,
        searcher_state: SearcherState,
        request_id: uuid.UUID,
        metric: float,
        train_length: int,
    ) -> list[Operation]:
        """The trial, trained to ``train_length``, validated with the searcher ``metric``."""

    def on_validation_objectives(
        self,
        searcher_state: SearcherState,
        request_id: uuid.UUID,
        objectives: tuple[float, ...],
        train_length: int,
    ) -> list[Operation]:
        """A multi-objective search (``searcher.metrics`` lists several): the trial, trained
        to ``train_length``, validated with one value per objective, in the order of
        ``searcher.metrics`` (NaN where the validation lacked one). Called instead of
        :meth:`on_validation_completed`; by default it calls that with the first objective
        (the searcher metric), so a single-objective method works unchanged."""
        return self.on_validation_completed(searcher_state, request_id, objectives[0], train_length)

    @abc.abstractmethod
    def on_trial_closed(
        self, searcher_state: SearcherState, request_id: uuid.UUID
    ) -> list[Operation]:
        """The trial is closed (after a ``Close``, or after it exited early)."""

    @abc.abstractmethod
    def on_trial_exited_early(
        self,
        searcher_state: SearcherState,
        request_id: uuid.UUID,
        exited_reason: ExitedReason,
    ) -> list[Operation]:
        """The trial stopped before being closed (errored, cancelled, invalid hyperparameters,
        or stopped by its own code)."""

    @abc.abstractmethod
    def progress(self, searcher_state: SearcherState) -> float:
        """How far the search is, from 0.0 to 1.0."""

    def save_method_state(self, path: pathlib.Path) -> None:
        """Save the method's own state into the directory ``path`` (default: nothing)."""
        return None

    def load_method_state(self, path: pathlib.Path) -> None:
        """Load what :meth:`save_method_state` saved in ``path`` (default: nothing)."""
        return None

    def save(
        self, searcher_state: SearcherState, path: pathlib.Path, *, experiment_id: int = 0
    ) -> None:
        """Save the searcher state (with ``experiment_id``) and the method's state into the
        directory ``path``."""
        path.mkdir(parents=True, exist_ok=True)
        record = {**searcher_state.to_dict(), "experimentId": experiment_id}
        (path / STATE_FILE).write_text(json.dumps(record))
        self.save_method_state(path)

    def load(self, path: pathlib.Path) -> tuple[SearcherState, int]:
        """Load what :meth:`save` saved; return the searcher state and the experiment id."""
        record = json.loads((path / STATE_FILE).read_text())
        state = SearcherState()
        state.from_dict(record)
        self.load_method_state(path)
        return state, int(record.get("experimentId") or 0)


class JSONStateSearchMethod(SearchMethod):
    """A search method whose whole state is JSON data (every built-in one).

    :meth:`state_dict` returns plain JSON data with ``json.loads(json.dumps(s)) == s``;
    :meth:`load_state_dict`, on a method built with the same constructor arguments, restores
    it so that every later call behaves as it would have on the original. Saving and
    loading the method state go through them.
    """

    @abc.abstractmethod
    def state_dict(self) -> dict[str, Any]:
        """The method's whole state as JSON data."""

    @abc.abstractmethod
    def load_state_dict(self, state: dict[str, Any]) -> None:
        """Restore the state returned by :meth:`state_dict`."""

    def save_method_state(self, path: pathlib.Path) -> None:
        (path / METHOD_STATE_FILE).write_text(json.dumps(self.state_dict()))

    def load_method_state(self, path: pathlib.Path) -> None:
        self.load_state_dict(json.loads((path / METHOD_STATE_FILE).read_text()))
