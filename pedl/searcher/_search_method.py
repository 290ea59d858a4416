"""The interface every searcher implements."""

from __future__ import annotations

import abc
from typing import Any

from pedl.searcher._exited_reason import ExitedReason
from pedl.searcher._operations import Operation


class SearchMethod(abc.ABC):
    """A hyperparameter search algorithm: events in, operations out.

    Contract:

    - **Pure.** No I/O, no clocks, no global randomness: all randomness comes from a
      ``random.Random`` seeded in the constructor and kept in the state. Given the same
      constructor arguments and the same sequence of calls, a searcher returns the same
      operations and reaches the same :meth:`state_dict`.
    - **Call order.** The caller calls :meth:`initial_operations` exactly once, first; then
      one method per event, in the order the events happened, one at a time (no method is
      re-entered; a searcher needs no locking). Events only name request ids the searcher
      created. Every created trial is eventually closed: :meth:`on_trial_closed` follows
      :meth:`on_trial_exited_early` for the same trial, and may also come without a ``Close``
      having been asked for.
    - **Operations.** Each call returns the operations to carry out next, in order. The
      operations for one request id are carried out in the order returned: ``Create``, then
      ``ValidateAfter`` with increasing absolute lengths, then ``Close``. ``Shutdown`` ends
      the search and is returned once.
    - **State.** :meth:`state_dict` returns plain JSON data (dicts with str keys, lists, str,
      int, float, bool, None) with ``json.loads(json.dumps(s)) == s``;
      :meth:`load_state_dict` on a searcher built with the same constructor arguments
      restores it so that every later call behaves as it would have on the original.
    """

    @abc.abstractmethod
    def initial_operations(self) -> list[Operation]:
        """Return the operations that start the search (usually ``Create`` operations)."""

    @abc.abstractmethod
    def on_trial_created(self, request_id: int) -> list[Operation]:
        """A ``Create`` was carried out: the trial exists."""

    @abc.abstractmethod
    def on_validation_completed(
        self, request_id: int, metric: float, length: int
    ) -> list[Operation]:
        """A ``ValidateAfter`` finished: the trial, trained to ``length``, scored ``metric``."""

    @abc.abstractmethod
    def on_trial_exited_early(self, request_id: int, reason: ExitedReason) -> list[Operation]:
        """The trial stopped before being closed (errored, cancelled, or invalid hparams)."""

    @abc.abstractmethod
    def on_trial_closed(self, request_id: int) -> list[Operation]:
        """The trial is closed (after a ``Close``, or after it exited early)."""

    @abc.abstractmethod
    def progress(self) -> float:
        """Return how far the search is, from 0.0 to 1.0 (1.0 once it has shut down)."""

    @abc.abstractmethod
    def state_dict(self) -> dict[str, Any]:
        """Return the searcher's whole state as JSON data."""

    @abc.abstractmethod
    def load_state_dict(self, state: dict[str, Any]) -> None:
        """Restore the state returned by :meth:`state_dict`."""
