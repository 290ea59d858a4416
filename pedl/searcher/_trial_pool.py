"""The shared logic of searchers that run a fixed list of trials to ``max_length``."""

from __future__ import annotations

import abc
import random
import uuid
from dataclasses import asdict, dataclass
from typing import Any, ClassVar

from pedl.searcher._errors import SearcherError
from pedl.searcher._exited_reason import ExitedReason
from pedl.searcher._operations import Close, Create, Operation, Shutdown, ValidateAfter
from pedl.searcher._search_method import JSONStateSearchMethod, SearcherState

MAX_INVALID_REPLACEMENTS = 1000


@dataclass
class _Trial:
    request_id: str
    index: int
    created: bool = False
    validated_length: int = 0
    close_requested: bool = False
    exited: str | None = None
    closed: bool = False
    released: bool = False


class TrialPoolSearch(JSONStateSearchMethod):
    """Runs ``num_trials`` trials, each trained to ``max_length`` and validated once.

    At most ``max_concurrent_trials`` trials (0: no limit) are open at once; when one is
    closed or exits early, the next is created. A trial that exits early is not retried.
    Each ``Create`` is followed at once by ``ValidateAfter(request_id, max_length)``; the
    ``Close`` comes when that validation completes. ``Shutdown`` comes when every trial is
    closed (a trial that exits early is closed after it), with ``failure=True`` if every
    trial errored.

    Subclasses say which hyperparameters the n-th trial gets (:meth:`_hparams_for`), drawing
    any randomness from ``self._rng`` (seeded with ``seed``). Request ids are
    ``uuid.UUID(int=n)``, n counting up from 1.
    """

    replace_invalid: ClassVar[bool] = False
    """Whether a trial that exits with ``INVALID_HP`` is replaced by a new one (random search
    draws another sample; a grid point stays invalid). At most :data:`MAX_INVALID_REPLACEMENTS`
    replacements are made, so a model that rejects every sample still ends."""

    def __init__(
        self, *, num_trials: int, max_length: int, max_concurrent_trials: int, seed: int
    ) -> None:
        if num_trials < 0 or max_length <= 0 or max_concurrent_trials < 0:
            raise SearcherError(
                f"Invalid searcher settings: num_trials={num_trials} (>= 0), "
                f"max_length={max_length} (> 0), "
                f"max_concurrent_trials={max_concurrent_trials} (>= 0)."
            )
        self._num_trials = num_trials
        self._max_length = max_length
        self._limit = max_concurrent_trials or max(num_trials, 1)
        self._rng = random.Random(seed)
        self._next_request_id = 1
        self._trials: dict[str, _Trial] = {}
        self._started = False
        self._shutdown = False

    @abc.abstractmethod
    def _hparams_for(self, index: int) -> dict[str, Any]:
        """Return the hyperparameters of the ``index``-th trial (0-based, in creation order)."""

    def initial_operations(self, searcher_state: SearcherState) -> list[Operation]:
        if self._started:
            raise SearcherError("initial_operations() was already called.")
        self._started = True
        return self._fill()

    def on_trial_created(
        self, searcher_state: SearcherState, request_id: uuid.UUID
    ) -> list[Operation]:
        self._trial(request_id).created = True
        return []

    def on_validation_completed(
        self,
        searcher_state: SearcherState,
        request_id: uuid.UUID,
        metric: float,
        train_length: int,
    ) -> list[Operation]:
        trial = self._trial(request_id)
        trial.validated_length = max(trial.validated_length, train_length)
        if train_length >= self._max_length and not trial.close_requested and not trial.released:
            trial.close_requested = True
            return [Close(request_id)]
        return []

    def on_trial_exited_early(
        self,
        searcher_state: SearcherState,
        request_id: uuid.UUID,
        exited_reason: ExitedReason,
    ) -> list[Operation]:
        trial = self._trial(request_id)
        trial.exited = ExitedReason(exited_reason).value
        return self._release(trial)

    def on_trial_closed(
        self, searcher_state: SearcherState, request_id: uuid.UUID
    ) -> list[Operation]:
        trial = self._trial(request_id)
        trial.closed = True
        return self._release(trial)

    def progress(self, searcher_state: SearcherState) -> float:
        if self._shutdown or self._num_trials == 0:
            return 1.0
        done = sum(
            1.0 if t.released else min(1.0, t.validated_length / self._max_length)
            for t in self._trials.values()
        )
        return min(1.0, done / self._num_trials)

    def state_dict(self) -> dict[str, Any]:
        version, internal, gauss_next = self._rng.getstate()
        return {
            "kind": type(self).__name__,
            "num_trials": self._num_trials,
            "max_length": self._max_length,
            "rng": [version, list(internal), gauss_next],
            "next_request_id": self._next_request_id,
            "started": self._started,
            "shutdown": self._shutdown,
            "trials": [asdict(t) for t in sorted(self._trials.values(), key=_by_id)],
        }

    def load_state_dict(self, state: dict[str, Any]) -> None:
        expected = (type(self).__name__, self._num_trials, self._max_length)
        found = (state.get("kind"), state.get("num_trials"), state.get("max_length"))
        if found != expected:
            raise SearcherError(
                f"Searcher state for (kind, num_trials, max_length)={found} cannot be loaded "
                f"into a searcher with {expected}."
            )
        try:
            version, internal, gauss_next = state["rng"]
            self._rng.setstate((version, tuple(internal), gauss_next))
            self._next_request_id = int(state["next_request_id"])
            self._started = bool(state["started"])
            self._shutdown = bool(state["shutdown"])
            trials = [_Trial(**t) for t in state["trials"]]
        except (KeyError, TypeError, ValueError) as e:
            raise SearcherError(f"Malformed searcher state: {e}") from e
        self._trials = {t.request_id: t for t in trials}

    def _trial(self, request_id: uuid.UUID) -> _Trial:
        trial = self._trials.get(str(request_id))
        if trial is None:
            raise SearcherError(f"Unknown trial request id {request_id}.")
        return trial

    def _release(self, trial: _Trial) -> list[Operation]:
        """Free the trial's slot (once, at its exit or close) and create what now fits; shut
        down once every trial has been created and closed."""
        ops: list[Operation] = []
        if not trial.released:
            trial.released = True
            ops = self._fill()
        all_closed = all(t.closed for t in self._trials.values())
        if all_closed and self._counted() >= self._num_trials and not self._shutdown:
            self._shutdown = True
            failure = all(t.exited == ExitedReason.ERRORED for t in self._trials.values())
            ops.append(Shutdown(failure=failure))
        return ops

    def _counted(self) -> int:
        """Trials that count toward ``num_trials`` (replaced invalid ones do not)."""
        if not self.replace_invalid:
            return len(self._trials)
        invalid = sum(1 for t in self._trials.values() if t.exited == ExitedReason.INVALID_HP)
        return len(self._trials) - min(invalid, MAX_INVALID_REPLACEMENTS)

    def _fill(self) -> list[Operation]:
        ops: list[Operation] = []
        if self._num_trials == 0 and not self._shutdown:
            self._shutdown = True
            return [Shutdown()]
        open_trials = sum(1 for t in self._trials.values() if not t.released)
        while open_trials < self._limit and self._counted() < self._num_trials:
            request_id = uuid.UUID(int=self._next_request_id)
            self._next_request_id += 1
            index = len(self._trials)
            hparams = self._hparams_for(index)
            self._trials[str(request_id)] = _Trial(request_id=str(request_id), index=index)
            ops.append(Create(request_id, hparams))
            ops.append(ValidateAfter(request_id, self._max_length))
            open_trials += 1
        return ops


def _by_id(trial: _Trial) -> int:
    return uuid.UUID(trial.request_id).int
