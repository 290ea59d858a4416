"""Asynchronous successive halving (ASHA; Li et al., "A System for Massively Parallel
Hyperparameter Tuning", arXiv:1810.05934), as Determined's ``async_halving`` and
``adaptive_asha`` searchers run it, over brackets of rungs.

The rules, with the paper's names (η is ``divisor``, R is ``max_length``, a bracket's
early-stopping rate s sets its number of rungs):

- **Rungs.** A bracket with ``num_rungs`` rungs trains its trials to the absolute lengths
  ``r_k = max(floor(max_length / divisor ** (num_rungs - 1 - k)), 1)`` for k = 0 ..
  num_rungs - 1: the top rung is ``max_length``, each rung below is ``divisor`` times
  shorter. A trial *reports at rung k* when it validates at ``r_k`` or more (validations at
  shorter lengths, e.g. from ``min_validation_period``, are not rung results).
- **Ranking.** Metrics are compared with smaller better (negated when ``smaller_is_better``
  is false); ties go to the earlier report. A trial that exits early (errored, cancelled,
  stopped itself, or raised ``InvalidHP`` after it had reported) counts as the worst metric
  at the rung it was training toward, so it ranks below every real result.
- **Several objectives** (``directions``: each objective's ``smaller_is_better``, as
  multi-objective ASHA (Schmucker et al., "Multi-objective Asynchronous Successive
  Halving", arXiv:2106.12639) ranks): a rung is ranked by Pareto front (non-dominated
  sorting of the results' objective vectors), and within a front by hypervolume
  contribution, larger first (:func:`~pedl.searcher.pareto_order`); equal contributions go
  to the earlier report. A result missing an objective (NaN) ranks as the worst, like an
  early exit. Promotion, stopping and closing then follow the same rules on that order.
- **Promotion** (the default; the paper's ``get_job``). When a result arrives at rung k
  (not the top) and rung k then holds n results, every trial among the best
  ``floor(n / divisor)`` not yet promoted is promoted: it is asked to train on to ``r_{k+1}``
  with a ``ValidateAfter`` at that length, continuing from where it stopped (the engine
  restarts it from its checkpoint; its batch counter goes on). A promoted trial stays
  promoted. A trial waiting at a rung holds no slot. A promoted trial that has already
  exited enters rung k+1 at once with the worst metric; one whose last validation already
  reached ``r_{k+1}`` (rung lengths repeat when ``max_length`` is small) enters it at once
  with the metric it has.
- **Stop once** (``stop_once``; Determined's stopping variant). A trial never waits: when it
  reports at rung k (not the top) it continues to ``r_{k+1}`` at once if it ranks among the
  best ``max(floor(n / divisor), 1)`` of the n results at rung k, and is closed otherwise. An
  early exit adds the worst metric to its rung and goes no higher.
- **Closing.** A trial that reports at the top rung is closed. A trial waiting at rung k
  (not promoted) is closed once rung k is *final*: every trial of the bracket has been
  created and none can still arrive at rung k (all lower rungs are final and no trial is
  training toward rung k). Every created trial ends closed; the search then shuts down
  (``failure=True`` if every trial errored).
- **New trials.** A bracket has at most ``max_concurrent_trials`` *active* trials (created or
  promoted and not yet reported at their rung, exited or closed); whenever it has fewer, it
  first starts waiting promotions, then creates new trials while it has created fewer than
  its ``max_trials``. With ``max_concurrent_trials`` 0, ``async_halving`` allows
  ``min(divisor ** (num_rungs - 1), max_trials)`` (at least one), as Determined does.
  Hyperparameters are drawn by ``sample`` from the searcher's ``random.Random(seed)``, at
  creation; request ids are ``uuid.UUID(int=n)``, n counting up from 1 across brackets.
- **Invalid hyperparameters.** A trial that raises ``InvalidHP`` before it reported any
  result is replaced by a new draw and does not count toward ``max_trials`` (as random search
  does, and Determined's ASHA): it has no result for any rung to forget. At most
  :data:`~pedl.searcher.MAX_INVALID_REPLACEMENTS` are replaced, so a model that rejects
  every draw still ends. One that raises it after reporting keeps its results (promotions
  were made on them) and counts as the worst metric, like any early exit.
- **Progress** (Determined's estimate, per bracket, averaged over brackets): the share of
  ``1.2 * max_trials`` that has reported at the bottom rung; once every trial has, at least
  the share of ``max_trials`` that is closed. 1.0 once shut down.

The whole state (the rng's included) is JSON data; given the constructor's arguments and
the events, every answer is determined, so replaying the event log restores the method.
"""

from __future__ import annotations

import math
import random
import uuid
from collections.abc import Callable, Sequence
from dataclasses import asdict, dataclass, field
from typing import Any

from pedl._pareto import pareto_order
from pedl.searcher._errors import SearcherError
from pedl.searcher._exited_reason import ExitedReason
from pedl.searcher._operations import Close, Create, Operation, Shutdown, ValidateAfter
from pedl.searcher._search_method import JSONStateSearchMethod, SearcherState
from pedl.searcher._trial_pool import MAX_INVALID_REPLACEMENTS

Sampler = Callable[[random.Random], dict[str, Any]]
"""Draws one trial's hyperparameters from the searcher's rng (and only from it)."""


def rung_lengths(max_length: int, num_rungs: int, divisor: float) -> list[int]:
    """The absolute length of each rung of a bracket, bottom first:
    ``max(floor(max_length / divisor ** (num_rungs - 1 - k)), 1)``."""
    if max_length <= 0 or num_rungs <= 0 or not divisor > 1:
        raise SearcherError(
            f"Invalid rungs: max_length={max_length} (> 0), num_rungs={num_rungs} (> 0), "
            f"divisor={divisor} (> 1)."
        )
    return [
        max(int(max_length / float_power(divisor, num_rungs - 1 - k)), 1) for k in range(num_rungs)
    ]


def float_power(divisor: float, exponent: int) -> float:
    """``divisor ** exponent`` as a float, infinite where it overflows."""
    try:
        return float(divisor**exponent)
    except OverflowError:
        return math.inf


@dataclass(frozen=True)
class ASHABracket:
    """One bracket of a halving search: ``num_rungs`` rungs of the lengths ``lengths``
    (absolute, bottom first), ``max_trials`` trials, at most ``max_concurrent_trials`` of them
    active at once."""

    num_rungs: int
    lengths: tuple[int, ...]
    max_trials: int
    max_concurrent_trials: int


@dataclass
class _Result:
    """A trial's result at one rung. ``metric``: smaller is better; ``None`` is the worst
    (an early exit, or a NaN)."""

    request_id: str
    metric: float | None
    seq: int
    promoted: bool = False
    values: list[float] | None = None
    """Several objectives: each one's value, smaller better (``None``: the worst)."""


@dataclass
class _Trial:
    request_id: str
    bracket: int
    rung: int = 0
    """The rung the trial trains toward, or waits at once it has reported there."""
    reported: bool = False
    """It has a result at :attr:`rung`."""
    active: bool = True
    """It holds a slot: an operation was issued that its report (or exit) will answer."""
    ready: bool = False
    """Promoted and waiting for a slot to be asked to train to :attr:`rung`."""
    validated: int = 0
    last_metric: float | None = None
    last_values: list[float] | None = None
    exited: str | None = None
    replaced: bool = False
    """It raised InvalidHP before reporting and a new draw takes its place."""
    close_requested: bool = False
    closed: bool = False


@dataclass
class _BracketState:
    rungs: list[list[_Result]] = field(default_factory=list)
    ready: list[str] = field(default_factory=list)


class HalvingSearch(JSONStateSearchMethod):
    """Asynchronous successive halving over one or more brackets, one search state; see the
    module's rules. :class:`AsyncHalvingSearch` runs one bracket and
    :class:`~pedl.searcher.AdaptiveASHASearch` several (Determined's tournament).

    Events for a trial go to its bracket; only that bracket then starts trials. Brackets
    share the rng and the request-id counter, so the draws depend on the order of events
    across brackets, and only on it.
    """

    def __init__(
        self,
        *,
        sample: Sampler,
        brackets: Sequence[ASHABracket],
        divisor: float,
        smaller_is_better: bool = True,
        stop_once: bool = False,
        seed: int,
        directions: Sequence[bool] = (),
    ) -> None:
        if not brackets or not divisor > 1:
            raise SearcherError(
                f"Invalid halving search: {len(brackets)} brackets (> 0), divisor={divisor} (> 1)."
            )
        for b in brackets:
            if (
                b.max_trials < 1
                or b.max_concurrent_trials < 1
                or len(b.lengths) != b.num_rungs
                or b.num_rungs < 1
                or any(x <= 0 for x in b.lengths)
                or list(b.lengths) != sorted(b.lengths)
            ):
                raise SearcherError(f"Invalid bracket {b}.")
        self._sample = sample
        self._brackets = tuple(brackets)
        self._divisor = float(divisor)
        self._smaller_is_better = smaller_is_better
        self._stop_once = stop_once
        self._directions = [bool(d) for d in directions] if len(directions) > 1 else []
        self._rng = random.Random(seed)
        self._next_request_id = 1
        self._seq = 0
        self._replacements = 0
        self._trials: dict[str, _Trial] = {}
        self._state = [
            _BracketState(rungs=[[] for _ in range(b.num_rungs)]) for b in self._brackets
        ]
        self._started = False
        self._shutdown = False

    @property
    def brackets(self) -> tuple[ASHABracket, ...]:
        """The brackets, in the order they start trials (most rungs first)."""
        return self._brackets

    @property
    def divisor(self) -> float:
        """The divisor (the paper's eta): the ratio of rung lengths and of rung sizes."""
        return self._divisor

    @property
    def max_trials(self) -> int:
        """Trials the search runs in all (replaced ``InvalidHP`` trials not counted)."""
        return sum(b.max_trials for b in self._brackets)

    @property
    def max_concurrent_trials(self) -> int:
        """The most trials active at once, over all brackets."""
        return sum(b.max_concurrent_trials for b in self._brackets)

    # events --------------------------------------------------------------------------------

    def initial_operations(self, searcher_state: SearcherState) -> list[Operation]:
        if self._started:
            raise SearcherError("initial_operations() was already called.")
        self._started = True
        ops: list[Operation] = []
        for index in range(len(self._brackets)):
            ops += self._fill(index)
        return ops

    def on_trial_created(
        self, searcher_state: SearcherState, request_id: uuid.UUID
    ) -> list[Operation]:
        self._trial(request_id)
        return []

    def on_validation_completed(
        self,
        searcher_state: SearcherState,
        request_id: uuid.UUID,
        metric: float,
        train_length: int,
    ) -> list[Operation]:
        trial = self._trial(request_id)
        lengths = self._brackets[trial.bracket].lengths
        if not trial.active or trial.exited or trial.closed or train_length < lengths[trial.rung]:
            return []  # not a rung result (e.g. a min_validation_period validation)
        if self._directions:  # several objectives: only the first one was given
            missing = (math.nan,) * (len(self._directions) - 1)
            return self.on_validation_objectives(
                searcher_state, request_id, (float(metric), *missing), train_length
            )
        trial.active = False
        trial.validated = max(trial.validated, int(train_length))
        value = self._normalise(metric)
        trial.last_metric = value
        ops = self._report(trial, value)
        return ops + self._after(trial.bracket)

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
        trial = self._trial(request_id)
        lengths = self._brackets[trial.bracket].lengths
        if not trial.active or trial.exited or trial.closed or train_length < lengths[trial.rung]:
            return []
        if len(objectives) != len(self._directions):
            raise SearcherError(
                f"Trial {request_id} reported {len(objectives)} objectives; the search has "
                f"{len(self._directions)}."
            )
        trial.active = False
        trial.validated = max(trial.validated, int(train_length))
        values = self._normalise_all(objectives)
        trial.last_metric = None if values is None else values[0]
        trial.last_values = values
        ops = self._report(trial, trial.last_metric, values)
        return ops + self._after(trial.bracket)

    def on_trial_exited_early(
        self,
        searcher_state: SearcherState,
        request_id: uuid.UUID,
        exited_reason: ExitedReason,
    ) -> list[Operation]:
        trial = self._trial(request_id)
        reason = ExitedReason(exited_reason)
        trial.exited = reason.value
        ops: list[Operation] = []
        never_reported = not any(
            r.request_id == trial.request_id for rung in self._rungs(trial) for r in rung
        )
        if (
            reason == ExitedReason.INVALID_HP
            and never_reported
            and self._replacements < MAX_INVALID_REPLACEMENTS
        ):
            self._replacements += 1
            trial.replaced = True
            trial.active = False
            self._unready(trial)
        else:
            ops = self._drop_out(trial)
        return ops + self._after(trial.bracket)

    def on_trial_closed(
        self, searcher_state: SearcherState, request_id: uuid.UUID
    ) -> list[Operation]:
        trial = self._trial(request_id)
        trial.closed = True
        ops = [] if trial.replaced else self._drop_out(trial)
        return ops + self._after(trial.bracket)

    def progress(self, searcher_state: SearcherState) -> float:
        if self._shutdown:
            return 1.0
        total = 0.0
        for index, bracket in enumerate(self._brackets):
            reported = len(self._state[index].rungs[0])
            done = reported / (1.2 * bracket.max_trials)
            if reported >= bracket.max_trials:
                closed = sum(1 for t in self._bracket_trials(index) if t.closed and not t.replaced)
                done = max(done, closed / bracket.max_trials)
            total += min(done, 1.0)
        return total / len(self._brackets)

    # state -----------------------------------------------------------------------------------

    def state_dict(self) -> dict[str, Any]:
        version, internal, gauss_next = self._rng.getstate()
        return {
            "kind": type(self).__name__,
            "brackets": [asdict(b) | {"lengths": list(b.lengths)} for b in self._brackets],
            "stop_once": self._stop_once,
            "directions": list(self._directions),
            "rng": [version, list(internal), gauss_next],
            "next_request_id": self._next_request_id,
            "seq": self._seq,
            "replacements": self._replacements,
            "started": self._started,
            "shutdown": self._shutdown,
            "trials": [asdict(t) for t in sorted(self._trials.values(), key=_by_id)],
            "rungs": [[[asdict(r) for r in rung] for rung in s.rungs] for s in self._state],
            "ready": [list(s.ready) for s in self._state],
        }

    def load_state_dict(self, state: dict[str, Any]) -> None:
        mine = self.state_dict()
        expected = (mine["kind"], mine["brackets"], mine["stop_once"], mine["directions"])
        found = (
            state.get("kind"),
            state.get("brackets"),
            state.get("stop_once"),
            state.get("directions", []),
        )
        if found != expected:
            raise SearcherError(
                f"Searcher state for (kind, brackets, stop_once, directions)={found} cannot "
                "be loaded "
                f"into a searcher with {expected}."
            )
        try:
            version, internal, gauss_next = state["rng"]
            rng_state = (version, tuple(internal), gauss_next)
            trials = [_Trial(**t) for t in state["trials"]]
            rungs = [
                [[_Result(**r) for r in rung] for rung in bracket] for bracket in state["rungs"]
            ]
            ready = [[str(r) for r in bracket] for bracket in state["ready"]]
            counters = (
                int(state["next_request_id"]),
                int(state["seq"]),
                int(state["replacements"]),
                bool(state["started"]),
                bool(state["shutdown"]),
            )
        except (KeyError, TypeError, ValueError) as e:
            raise SearcherError(f"Malformed searcher state: {e}") from e
        if len(rungs) != len(self._brackets) or len(ready) != len(self._brackets):
            raise SearcherError("Malformed searcher state: wrong number of brackets.")
        self._rng.setstate(rng_state)
        self._trials = {t.request_id: t for t in trials}
        self._state = [_BracketState(r, q) for r, q in zip(rungs, ready, strict=True)]
        (
            self._next_request_id,
            self._seq,
            self._replacements,
            self._started,
            self._shutdown,
        ) = counters

    # rules -----------------------------------------------------------------------------------

    def _normalise(self, metric: float) -> float | None:
        value = float(metric)
        if math.isnan(value):
            return None
        return value if self._smaller_is_better else -value

    def _normalise_all(self, objectives: Sequence[float]) -> list[float] | None:
        """The objectives, smaller better; ``None`` (the worst) if one is missing."""
        values = [float(v) for v in objectives]
        if any(math.isnan(v) for v in values):
            return None
        return [v if smaller else -v for v, smaller in zip(values, self._directions, strict=True)]

    def _sort(self, rung: list[_Result]) -> None:
        """Order the rung best first: by metric, or by Pareto rank with several objectives."""
        if not self._directions:
            rung.sort(key=_rank)
            return
        rung.sort(key=lambda r: r.seq)
        ranked = [r for r in rung if r.values is not None]
        order = pareto_order([r.values for r in ranked if r.values is not None])
        rung[:] = [ranked[i] for i in order] + [r for r in rung if r.values is None]

    def _report(
        self, trial: _Trial, value: float | None, values: list[float] | None = None
    ) -> list[Operation]:
        """Record the trial's result at its rung; promote, continue or close what follows."""
        bracket = self._brackets[trial.bracket]
        rung = self._rungs(trial)[trial.rung]
        result = _Result(trial.request_id, value, self._seq, values=values)
        self._seq += 1
        rung.append(result)
        self._sort(rung)
        trial.reported = True
        if trial.rung == bracket.num_rungs - 1:
            return self._close(trial)
        if self._stop_once:
            if trial.exited or trial.closed:
                return []
            keep = max(int(len(rung) / self._divisor), 1)
            if rung.index(result) < keep:
                result.promoted = True
                return self._promote(trial)
            return self._close(trial)
        ops: list[Operation] = []
        for best in rung[: int(len(rung) / self._divisor)]:
            if not best.promoted:
                best.promoted = True
                ops += self._promote(self._trials[best.request_id])
        return ops

    def _promote(self, trial: _Trial) -> list[Operation]:
        """Move the trial up one rung: it enters at once when it cannot or need not train
        (it exited, was closed, or already validated that far); else it waits for a slot."""
        trial.rung += 1
        trial.reported = False
        if trial.exited or trial.closed:
            return self._report(trial, None)
        if trial.validated >= self._brackets[trial.bracket].lengths[trial.rung]:
            return self._report(trial, trial.last_metric, trial.last_values)
        trial.ready = True
        self._state[trial.bracket].ready.append(trial.request_id)
        return []

    def _drop_out(self, trial: _Trial) -> list[Operation]:
        """The trial will report no more: one training toward its rung (or promoted to it)
        gets the worst result there."""
        if trial.reported:
            return []
        trial.active = False
        self._unready(trial)
        return self._report(trial, None)

    def _unready(self, trial: _Trial) -> None:
        if trial.ready:
            trial.ready = False
            self._state[trial.bracket].ready.remove(trial.request_id)

    def _close(self, trial: _Trial) -> list[Operation]:
        if trial.close_requested or trial.closed or trial.exited:
            return []
        trial.close_requested = True
        return [Close(uuid.UUID(trial.request_id))]

    def _after(self, index: int) -> list[Operation]:
        """After an event in bracket ``index``: start what fits, close what can no longer be
        promoted, and shut down once everything is closed."""
        ops = self._fill(index) + self._close_final_rungs(index)
        if not self._shutdown and self._finished():
            self._shutdown = True
            failure = all(t.exited == ExitedReason.ERRORED for t in self._trials.values())
            ops.append(Shutdown(failure=failure))
        return ops

    def _fill(self, index: int) -> list[Operation]:
        bracket, state = self._brackets[index], self._state[index]
        ops: list[Operation] = []
        trials = self._bracket_trials(index)
        active = sum(1 for t in trials if t.active)
        counted = sum(1 for t in trials if not t.replaced)
        while active < bracket.max_concurrent_trials:
            if state.ready:
                trial = self._trials[state.ready.pop(0)]
                trial.ready = False
                trial.active = True
                ops.append(ValidateAfter(uuid.UUID(trial.request_id), bracket.lengths[trial.rung]))
            elif counted < bracket.max_trials:
                request_id = uuid.UUID(int=self._next_request_id)
                self._next_request_id += 1
                hparams = self._sample(self._rng)
                self._trials[str(request_id)] = _Trial(str(request_id), index)
                ops.append(Create(request_id, hparams))
                ops.append(ValidateAfter(request_id, bracket.lengths[0]))
                counted += 1
            else:
                break
            active += 1
        return ops

    def _close_final_rungs(self, index: int) -> list[Operation]:
        """Close the trials waiting unpromoted in final rungs (see the module's rules)."""
        bracket = self._brackets[index]
        trials = [t for t in self._bracket_trials(index) if not t.replaced]
        if len(trials) < bracket.max_trials:
            return []
        ops: list[Operation] = []
        for k, rung in enumerate(self._state[index].rungs[:-1]):
            if any(t.rung == k and not t.reported for t in trials):
                break  # a trial may still arrive at rung k: it and the rungs above stay open
            for result in rung:
                if not result.promoted:
                    ops += self._close(self._trials[result.request_id])
        return ops

    def _finished(self) -> bool:
        for index, bracket in enumerate(self._brackets):
            counted = sum(1 for t in self._bracket_trials(index) if not t.replaced)
            if counted < bracket.max_trials or self._state[index].ready:
                return False
        return all(t.closed for t in self._trials.values())

    def _rungs(self, trial: _Trial) -> list[list[_Result]]:
        return self._state[trial.bracket].rungs

    def _bracket_trials(self, index: int) -> list[_Trial]:
        return [t for t in self._trials.values() if t.bracket == index]

    def _trial(self, request_id: uuid.UUID) -> _Trial:
        trial = self._trials.get(str(request_id))
        if trial is None:
            raise SearcherError(f"Unknown trial request id {request_id}.")
        return trial


class AsyncHalvingSearch(HalvingSearch):
    """Determined's ``async_halving``: one bracket of ``num_rungs`` rungs up to
    ``max_length``, ``max_trials`` trials (see the module's rules)."""

    def __init__(
        self,
        *,
        sample: Sampler,
        max_length: int,
        num_rungs: int,
        max_trials: int,
        divisor: float = 4.0,
        max_concurrent_trials: int = 16,
        smaller_is_better: bool = True,
        stop_once: bool = False,
        seed: int,
    ) -> None:
        if max_trials < 1 or max_concurrent_trials < 0:
            raise SearcherError(
                f"Invalid searcher settings: max_trials={max_trials} (>= 1), "
                f"max_concurrent_trials={max_concurrent_trials} (>= 0)."
            )
        lengths = rung_lengths(max_length, num_rungs, divisor)
        if max_concurrent_trials > 0:
            limit = min(max_concurrent_trials, max_trials)
        else:
            limit = max(int(min(float_power(divisor, num_rungs - 1), max_trials)), 1)
        super().__init__(
            sample=sample,
            brackets=[ASHABracket(num_rungs, tuple(lengths), max_trials, limit)],
            divisor=divisor,
            smaller_is_better=smaller_is_better,
            stop_once=stop_once,
            seed=seed,
        )


def _rank(result: _Result) -> tuple[int, float, int]:
    if result.metric is None:
        return (1, 0.0, result.seq)
    return (0, result.metric, result.seq)


def _by_id(trial: _Trial) -> int:
    return uuid.UUID(trial.request_id).int
