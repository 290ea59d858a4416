"""Hyperparameter importance for the searcher metric: Optuna's PED-ANOVA evaluator
(Watanabe et al., 2023) over the trials that have a searcher-metric value, kept per
experiment.

PED-ANOVA asks which hyperparameters' values differ most between the best 10% of the trials
and all of them (Pearson divergence of the two Parzen estimates on a grid), so its cost grows
linearly with the trials (P6 in bench/RESULTS.md: 10,000 trials). Importing Optuna's
evaluators (they bring scikit-learn) and building a study of 10,000 trials still take seconds,
so the answer is kept per experiment and computed in a background thread, again only when the
trials' values changed and at most once every :data:`REFRESH_SECONDS`, while the answer kept
(or none yet) is served; it says how many trials it used (:data:`MAX_TRIALS` at most).

Optuna is an optional dependency (``pip install 'pedl[bayes]'``); without it
:func:`compute_importance` raises :class:`ImportanceUnavailableError` saying so.
"""

from __future__ import annotations

import json
import math
import random
import threading
import time
import warnings
from collections import OrderedDict
from collections.abc import Callable, Iterator, Mapping, Sequence
from dataclasses import dataclass
from datetime import datetime
from typing import Any

MAX_EXPERIMENTS = 8
REFRESH_SECONDS = 10.0
MAX_CATEGORIES = 1_000
"""A non-numeric hyperparameter with more distinct values than this is left out."""
MAX_TRIALS = 20_000
"""At most this many trials, a uniform sample of those with values beyond it (the answer says
how many): at 100,000 trials Optuna's study of them all took 36 s and 360 MB of the master's
memory (P6 in bench/RESULTS.md); the best 10% of a 20,000-trial sample estimate the same
densities."""
"""A non-numeric hyperparameter with more distinct values than this is left out."""
METHOD = "PED-ANOVA (Optuna)"


class ImportanceUnavailableError(RuntimeError):
    """Optuna, which computes the importances, is not installed."""


@dataclass(frozen=True)
class Importance:
    """Each varying hyperparameter's share of the importance (summing to 1 when any is
    nonzero), most important first, computed from ``trials`` trials."""

    importances: list[tuple[str, float]]
    trials: int
    method: str = METHOD


def _numeric(value: object) -> bool:
    return isinstance(value, int | float) and not isinstance(value, bool) and math.isfinite(value)


def _category(value: object) -> str | int | float | bool | None:
    if value is None or isinstance(value, str | bool | int | float):
        return value
    return json.dumps(value, sort_keys=True)


def compute_importance(
    columns: Mapping[str, Sequence[Any]],
    values: Sequence[float | None],
    *,
    smaller_is_better: bool,
    log_scale: frozenset[str] = frozenset(),
    max_trials: int = MAX_TRIALS,
) -> Importance:
    """The importance of each hyperparameter column (one value per trial, ``None`` where a
    trial has none) for ``values`` (the trials' searcher-metric values, ``None`` or
    non-finite where a trial has none; such trials are left out). Columns with one value only
    are left out; numbers are continuous (on a log scale when named in ``log_scale`` and all
    positive), anything else categorical. A trial without a value of some hyperparameter is
    left out of that hyperparameter's estimate (Optuna's rule for conditional parameters).
    Of more than ``max_trials`` trials with values, a uniform sample of ``max_trials`` (the
    same for the same trials) is used."""
    try:
        import optuna
        from optuna.distributions import (
            BaseDistribution,
            CategoricalDistribution,
            FloatDistribution,
        )
        from optuna.importance import PedAnovaImportanceEvaluator, get_param_importances
        from optuna.trial import FrozenTrial
    except ImportError as err:
        raise ImportanceUnavailableError(
            "hyperparameter importance needs Optuna on the master: pip install 'pedl[bayes]'"
        ) from err
    kept = [i for i, v in enumerate(values) if v is not None and math.isfinite(v)]
    if len(kept) > max_trials:
        kept = sorted(random.Random(len(kept)).sample(kept, max_trials))
    distributions: dict[str, BaseDistribution] = {}
    for name, column in columns.items():
        present = [column[i] for i in kept if column[i] is not None]
        if not present:
            continue
        if all(_numeric(v) for v in present):
            low, high = float(min(present)), float(max(present))
            if low < high:
                log = name in log_scale and low > 0
                distributions[name] = FloatDistribution(low, high, log=log)
        else:
            choices = list(dict.fromkeys(_category(v) for v in present))
            if 1 < len(choices) <= MAX_CATEGORIES:
                distributions[name] = CategoricalDistribution(choices)
    if len(kept) < 2 or not distributions:
        return Importance([(name, 0.0) for name in sorted(distributions)], len(kept))

    def frozen() -> Iterator[FrozenTrial]:
        # One at a time: the study keeps its own copy of each (100,000 trials: ~400 MB
        # when the list of them was kept too, P6 in bench/RESULTS.md).
        for i in kept:
            params: dict[str, Any] = {}
            used: dict[str, BaseDistribution] = {}
            for name, distribution in distributions.items():
                value = columns[name][i]
                if value is None:
                    continue
                if isinstance(distribution, FloatDistribution):
                    params[name] = float(value)
                else:
                    params[name] = _category(value)
                used[name] = distribution
            yield optuna.trial.create_trial(params=params, distributions=used, value=values[i])

    optuna.logging.set_verbosity(optuna.logging.ERROR)
    study = optuna.create_study(direction="minimize" if smaller_is_better else "maximize")
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")  # "experimental", "too few trials": said in the answer
        study.add_trials(frozen())
        found = get_param_importances(study, evaluator=PedAnovaImportanceEvaluator())
    ranked = sorted(
        ((name, float(found.get(name, 0.0))) for name in distributions),
        key=lambda item: (-item[1], item[0]),
    )
    return Importance(ranked, len(kept))


@dataclass
class _Entry:
    key: tuple[Any, ...] | None
    result: Importance | None
    computed_at: float
    computing: bool = False
    failure: Exception | None = None


class ImportanceCache:
    """The latest :class:`Importance` of the :data:`MAX_EXPERIMENTS` experiments asked about
    last, each known by ``(id, created_at)`` and kept with the fingerprint of the values it was
    computed from. Computing never holds up a request: it runs in a background thread (Optuna's
    first import alone takes seconds) while the answer kept, or none, is served. Thread-safe."""

    def __init__(
        self,
        max_experiments: int = MAX_EXPERIMENTS,
        refresh_seconds: float = REFRESH_SECONDS,
        clock: Callable[[], float] = time.monotonic,
    ) -> None:
        self._max = max_experiments
        self._refresh = refresh_seconds
        self._clock = clock
        self._lock = threading.Lock()
        self._entries: OrderedDict[tuple[int, datetime], _Entry] = OrderedDict()

    def get(
        self,
        experiment: tuple[int, datetime],
        key: tuple[Any, ...],
        compute: Callable[[], Importance],
    ) -> tuple[Importance | None, bool]:
        """The importance kept for the experiment (``None`` before the first is computed) and
        whether it is of the values fingerprinted by ``key``. When it is not, ``compute`` runs
        in a background thread, unless one already does or the one kept is younger than the
        refresh interval. Raises what the last background computation raised, once."""
        with self._lock:
            entry = self._entries.get(experiment)
            if entry is None:
                entry = self._entries[experiment] = _Entry(None, None, -math.inf)
                while len(self._entries) > self._max:
                    self._entries.popitem(last=False)
            self._entries.move_to_end(experiment)
            current = entry.key == key
            if not current and not entry.computing:
                due = entry.result is None or self._clock() - entry.computed_at >= self._refresh
                if due:
                    entry.computing = True
                    threading.Thread(
                        target=self._compute,
                        args=(entry, key, compute),
                        name="pedl-importance",
                        daemon=True,
                    ).start()
            failed = entry.failure
            entry.failure = None
        if failed is not None:
            raise failed
        return entry.result, current

    def _compute(
        self, entry: _Entry, key: tuple[Any, ...], compute: Callable[[], Importance]
    ) -> None:
        result: Importance | None = None
        failure: Exception | None = None
        try:
            result = compute()
        except Exception as err:  # told to the next request
            failure = err
        with self._lock:
            entry.computing = False
            entry.computed_at = self._clock()
            if result is not None:
                entry.key, entry.result = key, result
            entry.failure = failure
