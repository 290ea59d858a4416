"""The PEDL searcher a KerasTuner tuner stands for: its kind, objective and budget.

``RandomSearch`` is ``random``, ``GridSearch`` ``grid``, ``Hyperband`` ``adaptive_asha``
(divisor ``factor``, trials and rungs as many as KerasTuner's brackets have, each trial up to
``max_epochs``) and ``BayesianOptimization`` ``gp``; the kind is read from the tuner's oracle,
so a ``Tuner`` subclass given one of those oracles maps the same way.
"""

from __future__ import annotations

import dataclasses
from typing import Any

import keras_tuner

from pedl.config import OPEN_LENGTH, ExperimentConfig

_KINDS: tuple[tuple[type[Any], str], ...] = (
    (keras_tuner.oracles.HyperbandOracle, "adaptive_asha"),
    (keras_tuner.oracles.BayesianOptimizationOracle, "gp"),
    (keras_tuner.oracles.GridSearchOracle, "grid"),
    (keras_tuner.oracles.RandomSearchOracle, "random"),
)


class TunerSetupError(ValueError):
    """The tuner, or the experiment config beside it, is one PEDL cannot run as a search;
    the message names the setting and what to write instead."""


@dataclasses.dataclass(frozen=True)
class Objective:
    """KerasTuner's objective as PEDL's searcher metric."""

    metric: str
    smaller_is_better: bool


def objective_of(tuner: Any) -> Objective:
    """The tuner's objective (a name, whose direction KerasTuner infers, or
    ``keras_tuner.Objective(name, direction)``). Raises :class:`TunerSetupError` for several
    objectives (PEDL's searchers optimise one metric)."""
    objective = tuner.oracle.objective
    several = getattr(objective, "objectives", None)  # KerasTuner's MultiObjective
    if several:
        names = [o.name for o in several]
        raise TunerSetupError(
            f"the tuner's objective is several metrics {names}: a PEDL searcher optimises one; "
            "pass objective= one name or keras_tuner.Objective(name, direction)"
        )
    return Objective(metric=objective.name, smaller_is_better=objective.direction == "min")


def kind_of(tuner: Any) -> str:
    """The PEDL searcher name of the tuner's oracle."""
    for oracle_class, name in _KINDS:
        if isinstance(tuner.oracle, oracle_class):
            return name
    raise TunerSetupError(
        f"the tuner's oracle is a {type(tuner.oracle).__name__}: PEDL runs RandomSearch, "
        "GridSearch, Hyperband and BayesianOptimization (their oracles)"
    )


def hyperband_trials(oracle: Any) -> int:
    """The trials KerasTuner's Hyperband starts: the first round of each bracket, once per
    ``hyperband_iterations``."""
    brackets = oracle._get_num_brackets()
    first_rounds = sum(oracle._get_size(bracket, 0) for bracket in range(brackets))
    return int(first_rounds * oracle.hyperband_iterations)


def searcher_section(
    tuner: Any, config: ExperimentConfig, grid_points: int | None = None
) -> dict[str, Any]:
    """The ``searcher`` section of the search PEDL runs for ``tuner``, in the experiment
    ``config`` (whose ``searcher`` is ``pedl.tuner:KerasTunerSearch``; its ``max_length``,
    where given, is each trial's length).

    Checks that the config's ``searcher.metric`` and ``smaller_is_better`` are the tuner's
    objective (the master picks best trials and checkpoints by them), that Hyperband has a
    ``max_length`` of its ``max_epochs`` epochs (its rungs are lengths the trials train to)
    and that ``executions_per_trial`` is 1; raises :class:`TunerSetupError` naming the
    setting otherwise.
    """
    objective = objective_of(tuner)
    given = config.searcher
    if given.metric != objective.metric or given.smaller_is_better != objective.smaller_is_better:
        direction = "min" if objective.smaller_is_better else "max"
        raise TunerSetupError(
            f"the tuner's objective is {objective.metric!r} (direction {direction!r}) but the "
            f"config's searcher has metric {given.metric!r} and smaller_is_better "
            f"{given.smaller_is_better}: set searcher.metric: {objective.metric} and "
            f"searcher.smaller_is_better: {str(objective.smaller_is_better).lower()}"
        )
    executions = getattr(tuner, "executions_per_trial", 1)
    if executions != 1:
        raise TunerSetupError(
            f"the tuner's executions_per_trial is {executions}: a PEDL trial trains its model "
            "once (its checkpoints, resume and metrics are those of one training run), so "
            "KerasTuner's average over executions has no counterpart; use "
            "executions_per_trial=1, or run the experiment again with another "
            "reproducibility.experiment_seed"
        )
    kind = kind_of(tuner)
    oracle = tuner.oracle
    length = config.searcher.max_length
    section: dict[str, Any] = {
        "name": kind,
        "metric": objective.metric,
        "smaller_is_better": objective.smaller_is_better,
    }
    if kind == "adaptive_asha":
        wanted = {"epochs": oracle.max_epochs}
        if length is None or (length.unit, length.value) != ("epochs", oracle.max_epochs):
            raise TunerSetupError(
                f"Hyperband trains trials up to max_epochs ({oracle.max_epochs}) in rungs that "
                "PEDL's adaptive_asha gives them as lengths: set searcher.max_length: "
                f"{wanted} in the config (with records_per_epoch: the training examples "
                "of one epoch)"
            )
        section.update(
            max_length=wanted,
            max_trials=hyperband_trials(oracle),
            divisor=float(oracle.factor),
            max_rungs=int(oracle._get_num_brackets()),
        )
        return section
    if length is not None:
        section["max_length"] = {length.unit: length.value}
    elif kind == "gp":
        # gp needs a length; the trials train their search(epochs=...) and stop themselves,
        # and gp takes each one's last validation.
        section["max_length"] = {"batches": OPEN_LENGTH}
    if kind in ("random", "gp"):
        section["max_trials"] = int(oracle.max_trials)
    elif (
        kind == "grid"
        and oracle.max_trials is not None
        and grid_points is not None
        and oracle.max_trials < grid_points
    ):
        raise TunerSetupError(
            f"GridSearch(max_trials={oracle.max_trials}) stops before the grid's "
            f"{grid_points} points: PEDL's grid searcher runs every point; leave "
            "max_trials unset or shrink the search space"
        )
    return section
