"""The scheduler: given the free slots and the queued trials, which trials start now.

Pure logic: inputs are immutable snapshots, the output is a :class:`Placement`. The caller
(the orchestrator) starts what it is told to start and shows the reasons of the rest.

Order: lower ``priority`` first (1..99, Determined's convention); among equal priorities the
experiment with the smallest share of slots per unit of ``weight`` goes first (fair share),
then the oldest trial. A trial that does not fit (not enough free slots, or its experiment at
its ``max_slots`` / ``max_concurrent_trials``) waits with a reason; smaller trials behind it
may still start (backfilling).
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field

DEFAULT_PRIORITY = 42
"""The priority of an experiment whose config names none (as in Determined)."""


@dataclass(frozen=True)
class TrialRequest:
    """A trial that wants slots. ``order`` breaks ties (smaller first, e.g. the trial id)."""

    trial_id: int
    experiment_id: int
    slots: int
    order: int


@dataclass(frozen=True)
class RunningTrial:
    """A trial that holds slots now."""

    trial_id: int
    experiment_id: int
    slots: int


@dataclass(frozen=True)
class ExperimentLimits:
    """An experiment's scheduling settings (from its config's ``resources`` and searcher)."""

    priority: int = DEFAULT_PRIORITY
    weight: float = 1.0
    max_slots: int | None = None
    max_concurrent_trials: int = 0
    """0: no limit."""


@dataclass(frozen=True)
class Placement:
    """What to start now (in order), and why each other queued trial waits."""

    start: list[int] = field(default_factory=list)
    waiting: dict[int, str] = field(default_factory=dict)


def never_fits(slots_per_trial: int, total_slots: int, max_slots: int | None = None) -> str | None:
    """Why a trial of ``slots_per_trial`` can never be placed, or None if it can."""
    if slots_per_trial > total_slots:
        return (
            f"needs {slots_per_trial} slot{'s' if slots_per_trial != 1 else ''}, "
            f"the cluster has {total_slots}"
        )
    if max_slots is not None and slots_per_trial > max_slots:
        return f"needs {slots_per_trial} slots, the experiment's resources.max_slots is {max_slots}"
    return None


def schedule(
    total_slots: int,
    running: Iterable[RunningTrial],
    queued: Iterable[TrialRequest],
    limits: Mapping[int, ExperimentLimits],
    *,
    halted: str | None = None,
    disabled_slots: int = 0,
) -> Placement:
    """Decide which ``queued`` trials start now on a cluster of ``total_slots``.

    ``limits`` maps experiment id to its settings (missing: the defaults). A trial is
    started only when its slots are free and its experiment stays within ``max_slots`` and
    ``max_concurrent_trials``; every trial not started gets a reason in ``waiting``. The
    result does not depend on the iteration order of ``queued``. With ``halted`` (why the
    cluster starts nothing now, e.g. the master's disk is full), no trial starts and that is
    every queued trial's reason. ``disabled_slots``: free slots that take no trial now (``det
    slot disable``): the trials wait for the others.
    """
    if halted is not None:
        return Placement(waiting={trial.trial_id: halted for trial in queued})
    running = list(running)
    used_by_exp: Counter[int] = Counter()
    count_by_exp: Counter[int] = Counter()
    for r in running:
        used_by_exp[r.experiment_id] += r.slots
        count_by_exp[r.experiment_id] += 1
    free = total_slots - sum(r.slots for r in running) - disabled_slots
    disabled = f", {disabled_slots} disabled" if disabled_slots else ""
    remaining = sorted(queued, key=lambda t: (t.order, t.trial_id))
    placement = Placement()

    def limit(exp: int) -> ExperimentLimits:
        return limits.get(exp, ExperimentLimits())

    def rank(t: TrialRequest) -> tuple[int, float, int, int]:
        lim = limit(t.experiment_id)
        share = used_by_exp[t.experiment_id] / lim.weight if lim.weight > 0 else float("inf")
        return (lim.priority, share, t.order, t.trial_id)

    while remaining:
        trial = min(remaining, key=rank)
        remaining.remove(trial)
        lim = limit(trial.experiment_id)
        impossible = never_fits(trial.slots, total_slots, lim.max_slots)
        if impossible is not None:
            placement.waiting[trial.trial_id] = impossible
            continue
        if lim.max_slots is not None and used_by_exp[trial.experiment_id] + trial.slots > (
            lim.max_slots
        ):
            placement.waiting[trial.trial_id] = (
                f"the experiment uses {used_by_exp[trial.experiment_id]} of its "
                f"{lim.max_slots} slots (resources.max_slots)"
            )
            continue
        if lim.max_concurrent_trials and (
            count_by_exp[trial.experiment_id] >= lim.max_concurrent_trials
        ):
            placement.waiting[trial.trial_id] = (
                f"the experiment runs {count_by_exp[trial.experiment_id]} trials, its "
                f"max_concurrent_trials is {lim.max_concurrent_trials}"
            )
            continue
        if trial.slots > free:
            placement.waiting[trial.trial_id] = (
                f"waiting for slots: needs {trial.slots}, {max(free, 0)} of {total_slots} "
                f"free{disabled}"
            )
            continue
        placement.start.append(trial.trial_id)
        free -= trial.slots
        used_by_exp[trial.experiment_id] += trial.slots
        count_by_exp[trial.experiment_id] += 1
    return placement
