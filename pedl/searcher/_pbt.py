"""Population-based training (PBT; Jaderberg et al., "Population Based Training of Neural
Networks", arXiv:1711.09846), as Determined's ``pbt`` searcher ran it: synchronous rounds
of truncation selection.

The rules (``population_size`` P, ``num_rounds`` R, ``length_per_round`` L,
``truncate_fraction`` f; n = ``int(f * P)``):

- **Population.** The search starts P trials with hyperparameters drawn by ``sample``. Every
  trial of the population trains L further each round: a trial validates at its own
  absolute lengths L, 2L, ... (a copy's counters start at 0 from its parent's weights).
- **Rounds.** A round ends when every member has its result: its validation at its
  round's length (validations at shorter lengths, e.g. from ``min_validation_period``,
  do not count), or the worst metric if it exited early (an exited member stays in the
  population with the worst metric every round, so the population never changes size).
  Metrics compare smaller better (negated when ``smaller_is_better`` is false); a NaN is
  the worst; ties go to the member created first.
- **Truncation.** After round r < R: the n worst members are closed; each of the n best
  live members (cycling through the live members, best first, when fewer than n are live)
  gets a copy: a new trial, ``Create(checkpoint=TrialCheckpoint(parent, its length))``,
  whose hyperparameters are explored from the parent's by ``explore`` (perturbed or
  resampled; :mod:`pedl.searcher._pbt_explore`); the other members go on for another
  round. After round R every live member is closed, and the search shuts down once every
  trial is closed (``failure=True`` if every trial errored). If no member is live, the
  search ends early the same way.
- **Progress**: the share of the P * R round results the search has had.

Request ids are ``uuid.UUID(int=n)``, n counting from 1; every draw comes from the
searcher's ``random.Random(seed)``: the state is JSON data and, given the constructor's
arguments and the events, every answer is determined (replaying the event log restores the
search: population, lineage and metrics).
"""

from __future__ import annotations

import math
import random
import uuid
from collections.abc import Callable
from dataclasses import asdict, dataclass, field
from typing import Any

from pedl.searcher._errors import SearcherError
from pedl.searcher._exited_reason import ExitedReason
from pedl.searcher._operations import (
    Close,
    Create,
    Operation,
    Shutdown,
    TrialCheckpoint,
    ValidateAfter,
)
from pedl.searcher._search_method import JSONStateSearchMethod, SearcherState

Sampler = Callable[[random.Random], dict[str, Any]]
"""Draws one trial's hyperparameters from the searcher's rng (and only from it)."""

Explorer = Callable[[dict[str, Any], random.Random], dict[str, Any]]
"""A copy's hyperparameters from its parent's, drawing only from the searcher's rng."""


@dataclass
class PBTMember:
    """One trial of the search. ``metric``: its result in the current round (smaller is
    better; ``None`` is the worst), absent while it has none."""

    request_id: str
    hparams: dict[str, Any]
    born: int
    """The round the trial was created for (0: the first population)."""
    parent: str | None = None
    parent_length: int | None = None
    target: int = 0
    """The length it trains to in the current round."""
    has_result: bool = False
    metric: float | None = None
    exited: str | None = None
    in_population: bool = True
    close_requested: bool = False
    closed: bool = False
    history: list[float | None] = field(default_factory=list)
    """Its result in each round it was a member of, in order (``None``: exited or NaN)."""


class PBTSearch(JSONStateSearchMethod):
    """Population-based training over synchronous rounds; see the module's rules."""

    def __init__(
        self,
        *,
        sample: Sampler,
        explore: Explorer,
        population_size: int,
        num_rounds: int,
        length_per_round: int,
        truncate_fraction: float,
        smaller_is_better: bool = True,
        seed: int,
    ) -> None:
        if (
            population_size < 1
            or num_rounds < 1
            or length_per_round < 1
            or not 0 <= truncate_fraction <= 0.5
        ):
            raise SearcherError(
                f"Invalid PBT search: population_size={population_size} (>= 1), "
                f"num_rounds={num_rounds} (>= 1), length_per_round={length_per_round} (>= 1), "
                f"truncate_fraction={truncate_fraction} (0 to 0.5)."
            )
        self._sample = sample
        self._explore = explore
        self._population_size = population_size
        self._num_rounds = num_rounds
        self._length_per_round = length_per_round
        self._truncate = int(truncate_fraction * population_size)
        self._smaller_is_better = smaller_is_better
        self._rng = random.Random(seed)
        self._next_request_id = 1
        self._round = 0
        self._members: dict[str, PBTMember] = {}
        self._started = False
        self._finished = False
        self._shutdown = False

    @property
    def population_size(self) -> int:
        """The number of trials training in every round."""
        return self._population_size

    @property
    def truncate_count(self) -> int:
        """How many members each round replaces: ``int(truncate_fraction * population)``."""
        return self._truncate

    @property
    def round(self) -> int:
        """The round in progress (0-based; ``num_rounds`` once every round is done)."""
        return self._round

    @property
    def members(self) -> list[PBTMember]:
        """Every trial the search created, in creation order (copies of the records)."""
        return [PBTMember(**asdict(m)) for m in self._ordered()]

    def population(self) -> list[str]:
        """The request ids of the current population, in creation order."""
        return [m.request_id for m in self._ordered() if m.in_population]

    # events --------------------------------------------------------------------------------

    def initial_operations(self, searcher_state: SearcherState) -> list[Operation]:
        if self._started:
            raise SearcherError("initial_operations() was already called.")
        self._started = True
        return [self._create(self._sample(self._rng), 0) for _ in range(self._population_size)]

    def on_trial_created(
        self, searcher_state: SearcherState, request_id: uuid.UUID
    ) -> list[Operation]:
        member = self._member(request_id)
        if member.exited or member.closed or member.has_result:
            return []
        return [ValidateAfter(request_id, member.target)]

    def on_validation_completed(
        self,
        searcher_state: SearcherState,
        request_id: uuid.UUID,
        metric: float,
        train_length: int,
    ) -> list[Operation]:
        member = self._member(request_id)
        if (
            not member.in_population
            or member.has_result
            or member.exited
            or member.closed
            or train_length < member.target
        ):
            return []
        value = float(metric)
        self._result(member, None if math.isnan(value) else self._sign(value))
        return self._maybe_end_round()

    def on_trial_exited_early(
        self,
        searcher_state: SearcherState,
        request_id: uuid.UUID,
        exited_reason: ExitedReason,
    ) -> list[Operation]:
        member = self._member(request_id)
        member.exited = ExitedReason(exited_reason).value
        if member.in_population and not member.has_result:
            self._result(member, None)
        return self._maybe_end_round()

    def on_trial_closed(
        self, searcher_state: SearcherState, request_id: uuid.UUID
    ) -> list[Operation]:
        member = self._member(request_id)
        member.closed = True
        ops: list[Operation] = []
        if member.in_population and not member.close_requested and not member.exited:
            # Closed without being asked (e.g. killed without an exit): a worst result.
            member.exited = ExitedReason.USER_CANCELED.value
            if not member.has_result:
                self._result(member, None)
            ops = self._maybe_end_round()
        return ops + self._maybe_shut_down(searcher_state)

    def progress(self, searcher_state: SearcherState) -> float:
        if self._shutdown:
            return 1.0
        done = self._round * self._population_size + sum(
            1 for m in self._members.values() if m.in_population and m.has_result
        )
        return min(done / (self._population_size * self._num_rounds), 1.0)

    # state -----------------------------------------------------------------------------------

    def state_dict(self) -> dict[str, Any]:
        version, internal, gauss_next = self._rng.getstate()
        return {
            "kind": type(self).__name__,
            "config": self._config_key(),
            "rng": [version, list(internal), gauss_next],
            "next_request_id": self._next_request_id,
            "round": self._round,
            "started": self._started,
            "finished": self._finished,
            "shutdown": self._shutdown,
            "members": [asdict(m) for m in self._ordered()],
        }

    def load_state_dict(self, state: dict[str, Any]) -> None:
        expected = (type(self).__name__, self._config_key())
        found = (state.get("kind"), state.get("config"))
        if found != expected:
            raise SearcherError(
                f"Searcher state for {found} cannot be loaded into a searcher with {expected}."
            )
        try:
            version, internal, gauss_next = state["rng"]
            rng_state = (version, tuple(internal), gauss_next)
            members = [PBTMember(**m) for m in state["members"]]
            counters = (
                int(state["next_request_id"]),
                int(state["round"]),
                bool(state["started"]),
                bool(state["finished"]),
                bool(state["shutdown"]),
            )
        except (KeyError, TypeError, ValueError) as e:
            raise SearcherError(f"Malformed searcher state: {e}") from e
        self._rng.setstate(rng_state)
        self._members = {m.request_id: m for m in members}
        (
            self._next_request_id,
            self._round,
            self._started,
            self._finished,
            self._shutdown,
        ) = counters

    # rules -----------------------------------------------------------------------------------

    def _config_key(self) -> list[Any]:
        return [
            self._population_size,
            self._num_rounds,
            self._length_per_round,
            self._truncate,
            self._smaller_is_better,
        ]

    def _sign(self, value: float) -> float:
        return value if self._smaller_is_better else -value

    def _ordered(self) -> list[PBTMember]:
        return sorted(self._members.values(), key=lambda m: uuid.UUID(m.request_id).int)

    def _member(self, request_id: uuid.UUID) -> PBTMember:
        member = self._members.get(str(request_id))
        if member is None:
            raise SearcherError(f"PBT search has no trial {request_id}.")
        return member

    def _create(
        self, hparams: dict[str, Any], born: int, parent: PBTMember | None = None
    ) -> Create:
        request_id = uuid.UUID(int=self._next_request_id)
        self._next_request_id += 1
        member = PBTMember(
            request_id=str(request_id),
            hparams=hparams,
            born=born,
            target=self._length_per_round,
        )
        checkpoint = None
        if parent is not None:
            member.parent = parent.request_id
            member.parent_length = parent.target
            checkpoint = TrialCheckpoint(uuid.UUID(parent.request_id), parent.target)
        self._members[member.request_id] = member
        return Create(request_id, dict(hparams), checkpoint)

    def _result(self, member: PBTMember, value: float | None) -> None:
        member.has_result = True
        member.metric = value
        member.history.append(None if value is None else self._sign(value))

    def _ranked(self) -> list[PBTMember]:
        """The population, best first (a worst result last; ties: created first)."""
        return sorted(
            (m for m in self._members.values() if m.in_population),
            key=lambda m: (
                m.metric is None,
                m.metric if m.metric is not None else 0.0,
                uuid.UUID(m.request_id).int,
            ),
        )

    def _maybe_end_round(self) -> list[Operation]:
        population = [m for m in self._members.values() if m.in_population]
        if self._finished or not all(m.has_result for m in population):
            return []
        self._round += 1
        ranked = self._ranked()
        live = [m for m in ranked if not m.exited]
        ops: list[Operation] = []
        if self._round >= self._num_rounds or not live:
            self._finished = True
            for member in ranked:
                ops += self._close(member)
            return ops
        worst = ranked[len(ranked) - self._truncate :] if self._truncate else []
        for member in worst:
            member.in_population = False
            ops += self._close(member)
        survivors = [m for m in ranked if m.in_population]
        parents = [live[i % len(live)] for i in range(self._truncate)]
        copies: list[Create] = []
        for parent in parents:
            hparams = self._explore(dict(parent.hparams), self._rng)
            copies.append(self._create(hparams, self._round, parent))
        ops += copies
        for member in survivors:
            member.has_result = False
            member.metric = None
            if member.exited:
                self._result(member, None)  # holds its place with the worst result
            else:
                member.target += self._length_per_round
                ops.append(ValidateAfter(uuid.UUID(member.request_id), member.target))
        return ops + self._maybe_end_round_if_all_exited()

    def _maybe_end_round_if_all_exited(self) -> list[Operation]:
        population = [m for m in self._members.values() if m.in_population]
        if population and all(m.has_result for m in population):
            return self._maybe_end_round()
        return []

    def _close(self, member: PBTMember) -> list[Operation]:
        if member.exited or member.closed or member.close_requested:
            return []
        member.close_requested = True
        return [Close(uuid.UUID(member.request_id))]

    def _maybe_shut_down(self, searcher_state: SearcherState) -> list[Operation]:
        if (
            self._shutdown
            or not self._finished
            or not all(m.closed for m in self._members.values())
        ):
            return []
        self._shutdown = True
        failure = bool(self._members) and all(
            m.exited == ExitedReason.ERRORED.value for m in self._members.values()
        )
        return [Shutdown(failure=failure)]
