"""What PEDL can run: settings that are valid Determined config but that the engine cannot
carry out are refused here, at validation, instead of the experiment ending in ERROR.

Two passes. ``check_runnable_raw`` runs on the raw mapping beside field validation (so a
searcher or storage PEDL lacks is reported once, without the noise of that section's other
fields); ``check_runnable`` runs on the validated config.
"""

from __future__ import annotations

import difflib
from collections.abc import Mapping
from typing import Any

from pedl.config._entrypoint import is_script_entrypoint, launcher_problems
from pedl.config._experiment import ExperimentConfig
from pedl.config._hyperparameters import (
    CategoricalHyperparameter,
    ConstHyperparameter,
    DoubleHyperparameter,
    IntHyperparameter,
    LogHyperparameter,
)
from pedl.config._issues import PathElement, Problem, describe_value
from pedl.config._legacy import REMOVED_SEARCHERS
from pedl.config._length import Length
from pedl.config._limits import limit_setting
from pedl.config._sampling import grid_axis_sizes, grid_size
from pedl.config._searcher import (
    SEARCHER_NAMES,
    TIME_METRIC_UNITS,
    AdaptiveASHASearcherConfig,
    AsyncHalvingSearcherConfig,
    GridSearcherConfig,
    RandomSearcherConfig,
    SingleSearcherConfig,
)
from pedl.config._storage import STORAGE_TYPES

MAX_GLOBAL_BATCH_SIZE = limit_setting("MAX_GLOBAL_BATCH_SIZE", 2**31, ceiling=2**31)
"""The largest ``global_batch_size`` hyperparameter value accepted (``PEDL_MAX_GLOBAL_BATCH_SIZE``
may lower it)."""

MAX_GRID_POINTS = limit_setting("MAX_GRID_POINTS", 100_000)
"""The most points (trials) a grid search may have (``PEDL_MAX_GRID_POINTS``)."""

BATCH_SIZE = "global_batch_size"
_BATCH_SIZE_PATH: tuple[PathElement, ...] = ("hyperparameters", BATCH_SIZE)


def _did_you_mean(word: str, choices: tuple[str, ...]) -> str:
    close = difflib.get_close_matches(word, list(choices), n=1, cutoff=0.6)
    return f"; did you mean '{close[0]}'?" if close else ""


def check_runnable_raw(data: Mapping[Any, Any]) -> list[Problem]:
    """Problems with ``searcher.name`` and ``checkpoint_storage.type`` on the raw config.

    A name PEDL has no implementation of is refused with the names it has (a Determined
    name is said to be one PEDL does not implement, a removed one says so, another name
    gets a "did you mean"). The caller drops every other problem below a path reported here.
    """
    problems: list[Problem] = launcher_problems(data.get("entrypoint"))
    searcher = data.get("searcher")
    if isinstance(searcher, Mapping):
        name = searcher.get("name")
        if isinstance(name, str) and name not in SEARCHER_NAMES:
            listing = ", ".join(SEARCHER_NAMES)
            if name in REMOVED_SEARCHERS:
                message = f"{REMOVED_SEARCHERS[name]}; use one of {listing}"
            else:
                message = (
                    f"must be one of {listing}; got '{name}'{_did_you_mean(name, SEARCHER_NAMES)}"
                )
            problems.append((("searcher", "name"), message))
    storage = data.get("checkpoint_storage")
    if isinstance(storage, Mapping):
        kind = storage.get("type")
        if isinstance(kind, str) and kind not in STORAGE_TYPES:
            listing = ", ".join(STORAGE_TYPES)
            message = f"must be one of {listing}; got '{kind}'{_did_you_mean(kind, STORAGE_TYPES)}"
            problems.append((("checkpoint_storage", "type"), message))
    return problems


def check_runnable(config: ExperimentConfig) -> list[Problem]:
    """Problems of a validated config that would only surface once trials run.

    - the ``global_batch_size`` hyperparameter, where its values are known up front (const,
      int, categorical), must be an integer in ``1..2**31`` and, with
      ``resources.slots_per_trial > 1``, divisible by it; a double or log one is refused;
    - a length in records or epochs needs a ``global_batch_size`` hyperparameter;
    - a grid search may have at most ``MAX_GRID_POINTS`` points;
    - an ASHA searcher's ``time_metric`` must be a length unit (batches, records, epochs) or,
      with a script entrypoint, a metric the script reports; epochs need
      ``records_per_epoch``, and ``max_time`` and ``time_metric`` go together;
    - ``single``, ``grid`` or ``random`` without ``searcher.max_length`` needs an entrypoint
      that decides its own length (a script); a Trial class trains for the searcher's length.

    A script entrypoint needs no ``global_batch_size`` hyperparameter: its ``fit(batch_size=)``
    gives the batch size.
    """
    problems = _check_batch_size(config) + _check_halving(config) + _check_open_length(config)
    if isinstance(config.searcher, GridSearcherConfig):
        points = grid_size(config.hyperparameters)
        if points is not None and points > MAX_GRID_POINTS:
            axes = sorted(
                ((name, size) for name, size in grid_axis_sizes(config.hyperparameters)),
                key=lambda axis: -(axis[1] or 0),
            )
            counts = " x ".join(f"{name} ({size:,})" for name, size in axes if size and size > 1)
            problems.append(
                (
                    ("hyperparameters",),
                    f"the grid has {points:,} points (one trial each), more than the limit of "
                    f"{MAX_GRID_POINTS:,} (PEDL_MAX_GRID_POINTS): {counts}; lower the counts or "
                    "the number of categorical values",
                )
            )
    return problems


def _lengths(config: ExperimentConfig) -> list[tuple[str, Length]]:
    lengths = [
        ("min_validation_period", config.min_validation_period),
        ("min_checkpoint_period", config.min_checkpoint_period),
    ]
    searcher = config.searcher
    if isinstance(searcher, AdaptiveASHASearcherConfig | AsyncHalvingSearcherConfig):
        length = searcher.length
        if length is not None and length is not searcher.max_length:
            lengths.insert(0, ("searcher.max_time", length))
            return lengths
    if searcher.max_length is not None:
        lengths.insert(0, ("searcher.max_length", searcher.max_length))
    return lengths


def _check_halving(config: ExperimentConfig) -> list[Problem]:
    """``time_metric``/``max_time`` of ``adaptive_asha`` and ``async_halving``: a Trial class
    is trained by PEDL's length units, so its ``time_metric`` must be one of them; a script
    entrypoint may name a validation metric it reports (Determined 0.38's meaning)."""
    searcher = config.searcher
    if not isinstance(searcher, AdaptiveASHASearcherConfig | AsyncHalvingSearcherConfig):
        return []
    metric, max_time = searcher.time_metric, searcher.max_time
    if metric is None and max_time is None:
        return []
    if metric is None or max_time is None:
        given, missing = (
            ("time_metric", "max_time") if max_time is None else ("max_time", "time_metric")
        )
        return [
            (
                ("searcher", missing),
                f"missing: searcher.{given} is given, and it needs {missing} too (the maximum "
                "training length is max_time measured in time_metric); or drop it and use "
                "max_length",
            )
        ]
    if metric not in TIME_METRIC_UNITS and not is_script_entrypoint(config.entrypoint):
        return [
            (
                ("searcher", "time_metric"),
                f"a Trial class is trained in {', '.join(TIME_METRIC_UNITS)} (the length units "
                f"PEDL trains by); got '{metric}', a metric only a script's own training loop "
                "can report (entrypoint: python3 train.py); use one of those units, or "
                "max_length",
            )
        ]
    if metric == "epochs" and config.records_per_epoch <= 0:
        return [
            (
                ("searcher", "time_metric"),
                "time_metric epochs needs records_per_epoch > 0; set records_per_epoch to the "
                "number of records in one epoch, or use batches or records",
            )
        ]
    return []


def _bad_batch_size(value: Any) -> str | None:
    if isinstance(value, bool) or not isinstance(value, int):
        return f"must be a positive integer, got {describe_value(value)}"
    if value < 1:
        return f"must be a positive integer, got {value}"
    if value > MAX_GLOBAL_BATCH_SIZE:
        limit = f"{MAX_GLOBAL_BATCH_SIZE:,} (PEDL_MAX_GLOBAL_BATCH_SIZE)"
        return f"must be at most {limit}, got {value}"
    return None


def _check_open_length(config: ExperimentConfig) -> list[Problem]:
    """Determined 0.38 lets the training code decide how long a trial trains; a Trial class
    (or a ``module:function`` entrypoint, which PEDL cannot tell from one here) trains for the
    length the searcher gives it, so it needs ``max_length``."""
    searcher = config.searcher
    if not isinstance(searcher, SingleSearcherConfig | GridSearcherConfig | RandomSearcherConfig):
        return []
    if searcher.max_length is not None or is_script_entrypoint(config.entrypoint):
        return []
    what = (
        f"the entrypoint '{config.entrypoint}' names a Trial class (or function)"
        if config.entrypoint
        else "the model definition's Trial class (no entrypoint)"
    )
    return [
        (
            ("searcher", "max_length"),
            f"missing: {what} trains for the length the {searcher.name} searcher gives it, so "
            "PEDL needs max_length (e.g. {epochs: 5}); only a script entrypoint (python3 "
            "train.py) decides its own length",
        )
    ]


def _check_batch_size(config: ExperimentConfig) -> list[Problem]:
    spec = config.hyperparameters.get(BATCH_SIZE)
    if spec is None:
        if is_script_entrypoint(config.entrypoint):
            return []  # the script's fit(batch_size=...) gives it
        for where, length in _lengths(config):
            if length.unit != "batches" and length.value > 0:
                return [
                    (
                        _BATCH_SIZE_PATH,
                        f"missing: {where} is in {length.unit}, which PEDL converts to batches "
                        "with the global_batch_size hyperparameter (records per batch); add it "
                        "under hyperparameters",
                    )
                ]
        return []
    values: list[Any]
    if isinstance(spec, ConstHyperparameter):
        values = [spec.val]
    elif isinstance(spec, CategoricalHyperparameter):
        values = list(spec.vals)
    elif isinstance(spec, IntHyperparameter):
        values = [spec.minval, spec.maxval]
    elif isinstance(spec, DoubleHyperparameter | LogHyperparameter):
        return [
            (
                _BATCH_SIZE_PATH,
                f"must be a positive integer; a {spec.type} hyperparameter gives fractional "
                "values (use int, categorical or a constant)",
            )
        ]
    else:
        return [(_BATCH_SIZE_PATH, "must be a positive integer, got a nested group")]
    for value in values:
        problem = _bad_batch_size(value)
        if problem is not None:
            return [(_BATCH_SIZE_PATH, problem)]
    slots = config.resources.slots_per_trial
    if slots > 1 and not isinstance(spec, IntHyperparameter):
        for value in values:
            if value % slots:
                return [
                    (
                        _BATCH_SIZE_PATH,
                        f"{value} is not divisible by resources.slots_per_trial ({slots}); "
                        "each slot trains on global_batch_size / slots_per_trial records",
                    )
                ]
    return []
