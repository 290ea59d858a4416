"""The search method behind the ``tpe`` and ``gp`` searchers: Bayesian search through Optuna's
ask-and-tell interface. Imports Optuna: it is imported only when a Bayesian searcher is built
(:mod:`pedl.searcher._bayes`)."""

from __future__ import annotations

import copy
import math
import uuid
from collections.abc import Mapping, Sequence
from dataclasses import asdict, dataclass
from typing import Any, Literal

import optuna
from optuna.trial import TrialState

from pedl.searcher._errors import SearcherError
from pedl.searcher._exited_reason import ExitedReason
from pedl.searcher._operations import Close, Create, Operation, Shutdown, ValidateAfter
from pedl.searcher._optuna_space import OptunaSpace
from pedl.searcher._search_method import JSONStateSearchMethod, SearcherState
from pedl.searcher._trial_pool import MAX_INVALID_REPLACEMENTS

OPTUNA_SAMPLERS: tuple[str, ...] = ("tpe", "gp", "nsga2")
"""The samplers :class:`OptunaSearch` runs: Optuna's ``TPESampler``, ``GPSampler`` and
``NSGAIISampler``."""

_COMPLETE = "COMPLETE"
_FAIL = "FAIL"


@dataclass
class _Trial:
    request_id: str
    index: int
    hparams: dict[str, Any]
    params: dict[str, Any]
    """Optuna's draw, by dotted name (a log hyperparameter's exponent, a categorical's index)."""
    created: bool = False
    validated_length: int = 0
    last_metric: float | None = None
    last_values: list[float] | None = None
    close_requested: bool = False
    exited: str | None = None
    closed: bool = False
    released: bool = False
    result: str | None = None
    """What Optuna is told: ``COMPLETE`` (with ``value``) or ``FAIL``; set once."""
    value: float | None = None
    values: list[float] | None = None
    """Several objectives: what Optuna is told with ``COMPLETE``."""
    told: bool = False


class OptunaSearch(JSONStateSearchMethod):
    """Bayesian search: ``max_trials`` trials whose hyperparameters an Optuna sampler draws,
    each trained to ``max_length`` and validated once.

    ``sampler``: ``"tpe"`` (``TPESampler(seed, n_startup_trials, multivariate=True,
    constant_liar=True)``), ``"gp"`` (``GPSampler(seed, n_startup_trials)``) or ``"nsga2"``
    (``NSGAIISampler(seed, population_size)``), in an in-memory study that minimizes the
    metric (maximizes it if not ``smaller_is_better``). With ``directions`` (each
    objective's ``smaller_is_better``, two or more: a multi-objective search) the study has
    one direction per objective and is told each trial's objective vector; a trial missing
    one (NaN) is told ``FAIL``.
    The first ``n_startup_trials`` draws are random; later ones are guided by the metrics
    told so far. ``space`` is the ``hyperparameters`` section, mapped by :class:`OptunaSpace`.

    One Optuna trial per PEDL trial, in creation order (``study.ask`` with the space's
    distributions). What Optuna is told of a trial:

    - it validated at ``max_length``: ``COMPLETE`` with that metric (a NaN metric: ``FAIL``),
      and the trial is closed;
    - it exited early: ``FAIL``, as Optuna fails a trial whose objective raised
      (``ERRORED``, ``INVALID_HP``) or was interrupted (``USER_CANCELED``); except that a
      trial that stopped itself (``USER_REQUESTED_STOP``) ends like an objective that
      returned early: ``COMPLETE`` with its latest metric (``FAIL`` if it validated never);
    - it closed without either: ``FAIL``.

    A trial that raises ``pedl.InvalidHP`` is replaced by a new draw (as in random search,
    at most :data:`MAX_INVALID_REPLACEMENTS` times): the search ends with ``max_trials``
    trials that had valid hyperparameters.

    **The same trials whatever the timing.** The n-th trial (from 0) is drawn once trials
    0 .. n - ``limit`` are over, and with exactly those told to Optuna, in creation order
    (``limit``: ``max_concurrent_trials``, or ``max_trials`` if 0); the trials after them are
    still running for Optuna (TPE's constant liar keeps new draws away from them). So the
    hyperparameters of every trial depend only on ``seed`` and the metrics of the trials
    before it, not on which of the concurrent trials finished first: two runs with the same
    seed (one of them interrupted by a master restart, say) run the same trials. The price:
    when an earlier trial is still running, a later one that finished does not free its slot
    until the earlier one is over.

    State: every call made to Optuna is recorded; :meth:`load_state_dict` rebuilds the study
    by making them again (and checks that Optuna draws the same values). Request ids are
    ``uuid.UUID(int=n)``, n counting up from 1. Optuna's log messages below WARNING are
    silenced (``optuna.logging.set_verbosity``, process-wide).
    """

    def __init__(
        self,
        *,
        space: Mapping[str, Any],
        sampler: str,
        seed: int,
        max_trials: int,
        max_length: int,
        max_concurrent_trials: int = 0,
        n_startup_trials: int = 10,
        smaller_is_better: bool = True,
        directions: Sequence[bool] = (),
        population_size: int = 50,
    ) -> None:
        if sampler not in OPTUNA_SAMPLERS:
            raise SearcherError(
                f"Unknown Optuna sampler {sampler!r}; use one of {', '.join(OPTUNA_SAMPLERS)}."
            )
        if max_trials < 1 or max_length <= 0 or max_concurrent_trials < 0 or n_startup_trials < 0:
            raise SearcherError(
                f"Invalid searcher settings: max_trials={max_trials} (>= 1), "
                f"max_length={max_length} (> 0), max_concurrent_trials={max_concurrent_trials} "
                f"(>= 0), n_startup_trials={n_startup_trials} (>= 0)."
            )
        self._space = OptunaSpace(space)
        self._sampler = sampler
        self._seed = seed
        self._max_trials = max_trials
        self._max_length = max_length
        self._max_concurrent_trials = max_concurrent_trials
        self._limit = max_concurrent_trials or max_trials
        self._n_startup_trials = n_startup_trials
        self._smaller_is_better = smaller_is_better
        self._directions = [bool(d) for d in directions] if len(directions) > 1 else []
        self._population_size = population_size
        self._study = self._new_study()
        self._trials: list[_Trial] = []
        self._calls: list[list[Any]] = []
        self._started = False
        self._shutdown = False

    # events ----------------------------------------------------------------------------------

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
        if self._directions:  # several objectives: only the first one was given
            missing = (math.nan,) * (len(self._directions) - 1)
            return self.on_validation_objectives(
                searcher_state, request_id, (float(metric), *missing), train_length
            )
        trial = self._trial(request_id)
        metric = float(metric)
        if train_length >= trial.validated_length:
            trial.validated_length = train_length
            trial.last_metric = None if math.isnan(metric) else metric
        return self._validated(trial, request_id, train_length)

    def on_validation_objectives(
        self,
        searcher_state: SearcherState,
        request_id: uuid.UUID,
        objectives: tuple[float, ...],
        train_length: int,
    ) -> list[Operation]:
        if not self._directions:
            return self.on_validation_completed(
                searcher_state, request_id, objectives[0], train_length
            )
        if len(objectives) != len(self._directions):
            raise SearcherError(
                f"Trial {request_id} reported {len(objectives)} objectives; the search has "
                f"{len(self._directions)}."
            )
        trial = self._trial(request_id)
        values = [float(v) for v in objectives]
        if train_length >= trial.validated_length:
            trial.validated_length = train_length
            complete = not any(math.isnan(v) for v in values)
            trial.last_values = values if complete else None
            trial.last_metric = values[0] if complete else None
        return self._validated(trial, request_id, train_length)

    def _validated(
        self, trial: _Trial, request_id: uuid.UUID, train_length: int
    ) -> list[Operation]:
        if train_length < self._max_length or trial.result is not None or trial.released:
            return []
        self._conclude(trial, stopped_itself=True)
        trial.close_requested = True
        return [Close(request_id)]

    def _conclude(self, trial: _Trial, *, stopped_itself: bool) -> None:
        """Set what Optuna is told of the trial: its latest result if it has one and
        ``stopped_itself`` (it trained to the end or stopped itself), else ``FAIL``."""
        if self._directions:
            values = trial.last_values if stopped_itself else None
            trial.result = _FAIL if values is None else _COMPLETE
            trial.values = None if values is None else list(values)
        else:
            trial.result, trial.value = _outcome(trial.last_metric if stopped_itself else None)

    def on_trial_exited_early(
        self,
        searcher_state: SearcherState,
        request_id: uuid.UUID,
        exited_reason: ExitedReason,
    ) -> list[Operation]:
        trial = self._trial(request_id)
        reason = ExitedReason(exited_reason)
        trial.exited = reason.value
        if trial.result is None:
            self._conclude(trial, stopped_itself=reason == ExitedReason.USER_REQUESTED_STOP)
        return self._release(trial)

    def on_trial_closed(
        self, searcher_state: SearcherState, request_id: uuid.UUID
    ) -> list[Operation]:
        trial = self._trial(request_id)
        trial.closed = True
        return self._release(trial)

    def progress(self, searcher_state: SearcherState) -> float:
        if self._shutdown:
            return 1.0
        done = sum(
            1.0 if t.released else min(1.0, t.validated_length / self._max_length)
            for t in self._trials
        )
        return min(1.0, done / self._max_trials)

    # state -----------------------------------------------------------------------------------

    def state_dict(self) -> dict[str, Any]:
        return {
            "kind": type(self).__name__,
            "settings": self._settings(),
            "started": self._started,
            "shutdown": self._shutdown,
            "trials": [asdict(t) for t in self._trials],
            "optuna_calls": [list(c) for c in self._calls],
            "optuna_version": optuna.__version__,
        }

    def load_state_dict(self, state: dict[str, Any]) -> None:
        found = (state.get("kind"), state.get("settings"))
        expected = (type(self).__name__, self._settings())
        if found != expected:
            raise SearcherError(
                f"Searcher state for {found} cannot be loaded into a searcher with {expected}."
            )
        try:
            trials = [_Trial(**t) for t in state["trials"]]
            calls = [(str(kind), int(index)) for kind, index in state["optuna_calls"]]
            started, shutdown = bool(state["started"]), bool(state["shutdown"])
        except (KeyError, TypeError, ValueError) as e:
            raise SearcherError(f"Malformed searcher state: {e}") from e
        if [t.index for t in trials] != list(range(len(trials))):
            raise SearcherError("Malformed searcher state: trials out of order.")
        told = [t.told for t in trials]
        for trial in trials:
            trial.told = False  # set again by the replayed tells
        self._study = self._new_study()
        self._trials, self._calls = [], []
        for kind, index in calls:
            drawn = len(self._trials)
            if kind == "ask" and index == drawn < len(trials):
                params = self._ask(index)
                if params != trials[index].params:
                    raise SearcherError(
                        f"Optuna drew {params} for trial {index + 1} where the saved search had "
                        f"{trials[index].params}: was Optuna changed (saved with "
                        f"{state.get('optuna_version')}, running {optuna.__version__})?"
                    )
                self._trials.append(trials[index])
            elif kind == "tell" and 0 <= index < drawn and _over(self._trials[index]):
                self._tell(self._trials[index])
            else:
                raise SearcherError(f"Malformed searcher state: Optuna call {[kind, index]}.")
        if len(self._trials) != len(trials) or [t.told for t in trials] != told:
            raise SearcherError("Malformed searcher state: the trials and Optuna calls differ.")
        self._started, self._shutdown = started, shutdown

    # internals -------------------------------------------------------------------------------

    def _settings(self) -> dict[str, Any]:
        return {
            "sampler": self._sampler,
            "seed": self._seed,
            "max_trials": self._max_trials,
            "max_length": self._max_length,
            "max_concurrent_trials": self._max_concurrent_trials,
            "n_startup_trials": self._n_startup_trials,
            "smaller_is_better": self._smaller_is_better,
            **({"directions": list(self._directions)} if self._directions else {}),
            **({"population_size": self._population_size} if self._sampler == "nsga2" else {}),
            "distributions": {
                name: optuna.distributions.distribution_to_json(d)
                for name, d in self._space.distributions.items()
            },
        }

    def _new_study(self) -> optuna.Study:
        optuna.logging.set_verbosity(optuna.logging.WARNING)
        sampler: optuna.samplers.BaseSampler
        if self._sampler == "tpe":
            sampler = optuna.samplers.TPESampler(
                seed=self._seed,
                n_startup_trials=self._n_startup_trials,
                multivariate=True,
                constant_liar=True,
            )
        elif self._sampler == "nsga2":
            sampler = optuna.samplers.NSGAIISampler(
                seed=self._seed, population_size=self._population_size
            )
        else:
            sampler = optuna.samplers.GPSampler(
                seed=self._seed,
                n_startup_trials=self._n_startup_trials,
                warn_independent_sampling=False,
            )
        if self._directions:
            return optuna.create_study(
                directions=[_direction(smaller) for smaller in self._directions], sampler=sampler
            )
        return optuna.create_study(direction=_direction(self._smaller_is_better), sampler=sampler)

    def _trial(self, request_id: uuid.UUID) -> _Trial:
        index = request_id.int - 1
        if not 0 <= index < len(self._trials) or self._trials[index].request_id != str(request_id):
            raise SearcherError(f"Unknown trial request id {request_id}.")
        return self._trials[index]

    def _ask(self, index: int) -> dict[str, Any]:
        trial = self._study.ask(self._space.distributions)
        if trial.number != index:
            raise SearcherError(f"Optuna numbered trial {index} as {trial.number}.")
        self._calls.append(["ask", index])
        return dict(trial.params)

    def _tell(self, trial: _Trial) -> None:
        if trial.result is None:
            raise SearcherError(f"Trial {trial.index + 1} is not over: Optuna cannot be told.")
        if trial.result == _COMPLETE and self._directions:
            self._study.tell(trial.index, trial.values)
        elif trial.result == _COMPLETE:
            self._study.tell(trial.index, trial.value)
        else:
            self._study.tell(trial.index, state=TrialState.FAIL)
        trial.told = True
        self._calls.append(["tell", trial.index])

    def _tell_through(self, last: int) -> None:
        """Tell Optuna the results of trials 0 .. ``last`` (all over), in creation order."""
        for trial in self._trials[: max(last + 1, 0)]:
            if not trial.told:
                self._tell(trial)

    def _release(self, trial: _Trial) -> list[Operation]:
        """The trial is over (exited or closed): free its slot once, create what now may be
        created, and shut down once every trial is closed."""
        ops: list[Operation] = []
        if not trial.released:
            trial.released = True
            if trial.result is None:
                trial.result = _FAIL
            ops = self._fill()
        all_closed = all(t.closed for t in self._trials)
        if all_closed and self._counted() >= self._max_trials and not self._shutdown:
            self._tell_through(len(self._trials) - 1)
            self._shutdown = True
            failure = all(t.exited == ExitedReason.ERRORED for t in self._trials)
            ops.append(Shutdown(failure=failure))
        return ops

    def _counted(self) -> int:
        """Trials that count toward ``max_trials`` (replaced invalid ones do not)."""
        invalid = sum(1 for t in self._trials if t.exited == ExitedReason.INVALID_HP)
        return len(self._trials) - min(invalid, MAX_INVALID_REPLACEMENTS)

    def _fill(self) -> list[Operation]:
        ops: list[Operation] = []
        while self._counted() < self._max_trials:
            index = len(self._trials)
            # Trial `index` is drawn knowing exactly trials 0 .. index - limit (see the class
            # docstring); this also keeps at most `limit` trials open.
            known = index - self._limit
            if known >= 0 and not all(t.released for t in self._trials[: known + 1]):
                break
            self._tell_through(known)
            params = self._ask(index)
            hparams = self._space.hparams(params)
            request_id = uuid.UUID(int=index + 1)
            self._trials.append(
                _Trial(str(request_id), index, copy.deepcopy(hparams), copy.deepcopy(params))
            )
            ops.append(Create(request_id, hparams))
            ops.append(ValidateAfter(request_id, self._max_length))
        return ops


def _over(trial: _Trial) -> bool:
    """Whether the trial's result is known and not yet told."""
    return trial.result is not None and not trial.told


def _direction(smaller_is_better: bool) -> Literal["minimize", "maximize"]:
    return "minimize" if smaller_is_better else "maximize"


def _outcome(metric: float | None) -> tuple[str, float | None]:
    return (_FAIL, None) if metric is None else (_COMPLETE, metric)
