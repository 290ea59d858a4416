"""A KerasTuner search space read as KerasTuner reads it, mapped to PEDL hyperparameters, and
the tuner's kind, objective and budget mapped to PEDL's searcher; no master, no training."""

from __future__ import annotations

import random
from typing import Any

import keras
import keras_tuner
import pytest

from pedl.config import grid_hparams, grid_size, parse_config, sample_hparams
from pedl.tuner import (
    SpaceError,
    TunerSetupError,
    keras_tuner_values,
    pedl_hyperparameters,
)
from pedl.tuner._searcher import hyperband_trials, searcher_section


def space_of(build: Any) -> keras_tuner.HyperParameters:
    """The space a tuner reads from ``build`` (its oracle's, after the tuner's own builds)."""
    tuner = keras_tuner.RandomSearch(
        hypermodel=build, objective="val_loss", max_trials=1, overwrite=True, directory=None
    )
    return tuner.oracle.get_space()


def test_every_hyperparameter_kind_maps_to_pedls() -> None:
    hp = keras_tuner.HyperParameters()
    hp.Int("layers", 1, 3)
    hp.Int("units", 32, 128, step=32)
    hp.Int("filters", 4, 32, step=2, sampling="log")
    hp.Float("dropout", 0.0, 0.5)
    hp.Float("lr", 1e-4, 1e-2, sampling="log")
    hp.Float("momentum", 0.5, 0.9, step=0.2)
    hp.Float("decay", 0.1, 0.9, step=3, sampling="reverse_log")
    hp.Choice("activation", ["relu", "tanh"])
    hp.Boolean("batch_norm")
    hp.Fixed("seed_units", 7)
    space = pedl_hyperparameters(hp)
    assert space["layers"] == {"type": "int", "minval": 1, "maxval": 3}
    assert space["units"] == {"type": "categorical", "vals": [32, 64, 96, 128]}
    assert space["filters"] == {"type": "categorical", "vals": [4, 8, 16, 32]}
    assert space["dropout"] == {"type": "double", "minval": 0.0, "maxval": 0.5}
    assert space["lr"] == {"type": "log", "base": 10.0, "minval": -4.0, "maxval": -2.0}
    assert space["momentum"]["type"] == "categorical"
    assert space["momentum"]["vals"] == pytest.approx([0.5, 0.7, 0.9])
    # reverse_log with a step: KerasTuner's own finite values, drawn uniformly as it does.
    assert space["decay"] == {
        "type": "categorical",
        "vals": [float(v) for v in hp._hps["decay"][0].values],
    }
    assert space["activation"] == {"type": "categorical", "vals": ["relu", "tanh"]}
    assert space["batch_norm"] == {"type": "categorical", "vals": [True, False]}
    assert space["seed_units"] == {"type": "const", "val": 7}
    parse_config(
        {
            "entrypoint": "python3 search.py",
            "hyperparameters": space,
            "searcher": {"name": "random", "metric": "val_loss", "max_trials": 2},
        }
    )


def test_a_log_float_draws_inside_its_bounds() -> None:
    hp = keras_tuner.HyperParameters()
    hp.Float("lr", 1e-4, 1e-2, sampling="log")
    config = parse_config(
        {
            "entrypoint": "python3 search.py",
            "hyperparameters": pedl_hyperparameters(hp),
            "searcher": {"name": "random", "metric": "val_loss", "max_trials": 2},
        }
    )
    draws = [sample_hparams(config.hyperparameters, random.Random(i))["lr"] for i in range(200)]
    assert all(1e-4 <= d <= 1e-2 for d in draws)
    # log-uniform: about half the draws below the geometric middle
    assert 60 < sum(d < 1e-3 for d in draws) < 140


@pytest.mark.parametrize(
    ("declare", "named"),
    [
        (lambda hp: hp.Float("x", 0.1, 1.0, sampling="reverse_log"), "reverse_log"),
        (lambda hp: hp.Int("x", 1, 100, sampling="reverse_log"), "reverse_log"),
        (lambda hp: hp.Int("x", 1, 100, sampling="log"), "Int(sampling='log')"),
    ],
)
def test_a_draw_pedl_has_no_type_for_is_refused_naming_it(declare: Any, named: str) -> None:
    hp = keras_tuner.HyperParameters()
    declare(hp)
    with pytest.raises(SpaceError, match=r"hyperparameter 'x'") as raised:
        pedl_hyperparameters(hp)
    assert named in str(raised.value) and "step=" in str(raised.value)


def build_conditional(hp: keras_tuner.HyperParameters) -> keras.Model:
    model = keras.Sequential([keras.Input(shape=(4,))])
    kind = hp.Choice("kind", ["mlp", "linear"])
    with hp.conditional_scope("kind", ["mlp"]):
        if kind == "mlp":
            model.add(keras.layers.Dense(hp.Int("units", 8, 16, step=8), activation="relu"))
    model.add(keras.layers.Dense(1))
    return model


def test_conditional_scopes_are_read_as_kerastuner_reads_them() -> None:
    space = space_of(build_conditional)
    # The scope is off with the default value; KerasTuner builds again with it on.
    assert pedl_hyperparameters(space) == {
        "kind": {"type": "categorical", "vals": ["mlp", "linear"]},
        "units": {"type": "categorical", "vals": [8, 16]},
    }
    linear = keras_tuner_values(space, {"kind": "linear", "units": 16, "global_batch_size": 8})
    assert linear.values == {"kind": "linear"}
    mlp = keras_tuner_values(space, {"kind": "mlp", "units": 16})
    assert mlp.values == {"kind": "mlp", "units": 16}
    assert build_conditional(mlp).layers[0].units == 16


def test_a_grid_gets_kerastuners_points() -> None:
    hp = keras_tuner.HyperParameters()
    hp.Int("layers", 1, 3)
    hp.Float("dropout", 0.0, 0.5)
    hp.Boolean("batch_norm")
    space = pedl_hyperparameters(hp, grid=True)
    assert space["layers"]["count"] == 3
    assert space["dropout"]["count"] == 10
    assert grid_size(space) == 3 * 10 * 2
    points = grid_hparams(
        parse_config(
            {
                "entrypoint": "python3 search.py",
                "hyperparameters": space,
                "searcher": {"name": "grid", "metric": "val_loss"},
            }
        ).hyperparameters
    )
    assert {p["layers"] for p in points} == {1, 2, 3}


def build_small(hp: keras_tuner.HyperParameters) -> keras.Model:
    model = keras.Sequential([keras.Input(shape=(4,)), keras.layers.Dense(hp.Choice("u", [2, 4]))])
    model.compile(loss="mse")
    return model


def custom_config(metric: str, smaller: bool, length: dict[str, int] | None = None) -> Any:
    searcher: dict[str, Any] = {
        "name": "custom",
        "search_method": "pedl.tuner:KerasTunerSearch",
        "metric": metric,
        "smaller_is_better": smaller,
    }
    if length is not None:
        searcher["max_length"] = length
    document = {"entrypoint": "python3 search.py", "searcher": searcher, "records_per_epoch": 64}
    return parse_config(document)


def test_tuner_kinds_map_to_pedl_searchers() -> None:
    common: dict[str, Any] = {"hypermodel": build_small, "overwrite": True, "directory": None}
    random_search = keras_tuner.RandomSearch(objective="val_loss", max_trials=5, **common)
    assert searcher_section(random_search, custom_config("val_loss", True)) == {
        "name": "random",
        "metric": "val_loss",
        "smaller_is_better": True,
        "max_trials": 5,
    }
    grid = keras_tuner.GridSearch(objective="val_accuracy", **common)
    assert searcher_section(grid, custom_config("val_accuracy", False)) == {
        "name": "grid",
        "metric": "val_accuracy",
        "smaller_is_better": False,
    }
    bayes = keras_tuner.BayesianOptimization(
        objective=keras_tuner.Objective("val_auc", direction="max"), max_trials=4, **common
    )
    section = searcher_section(bayes, custom_config("val_auc", False))
    assert (section["name"], section["max_trials"], section["smaller_is_better"]) == (
        "gp",
        4,
        False,
    )
    band = keras_tuner.Hyperband(objective="val_loss", max_epochs=9, factor=3, **common)
    section = searcher_section(band, custom_config("val_loss", True, {"epochs": 9}))
    assert section == {
        "name": "adaptive_asha",
        "metric": "val_loss",
        "smaller_is_better": True,
        "max_length": {"epochs": 9},
        "max_trials": hyperband_trials(band.oracle),
        "divisor": 3.0,
        "max_rungs": 3,
    }


@pytest.mark.parametrize(
    ("max_epochs", "factor", "trials"),
    # KerasTuner's Hyperband: brackets while max_epochs / factor**b >= 1; bracket b starts
    # ceil(ceil(1 + log_factor(max_epochs)) / (b + 1) * factor**b) trials.
    [(2, 2, 2 + 2), (9, 3, 3 + 5 + 9), (27, 3, 4 + 6 + 12 + 27)],
)
def test_hyperband_starts_as_many_trials_as_kerastuners(
    max_epochs: int, factor: int, trials: int
) -> None:
    band = keras_tuner.Hyperband(
        hypermodel=build_small,
        objective="val_loss",
        max_epochs=max_epochs,
        factor=factor,
        hyperband_iterations=2,
        overwrite=True,
        directory=None,
    )
    assert hyperband_trials(band.oracle) == 2 * trials


def test_settings_pedl_cannot_honour_are_refused_naming_them() -> None:
    common: dict[str, Any] = {"hypermodel": build_small, "overwrite": True, "directory": None}
    tuner = keras_tuner.RandomSearch(objective="val_loss", max_trials=2, **common)
    with pytest.raises(TunerSetupError, match=r"searcher\.metric: val_loss"):
        searcher_section(tuner, custom_config("val_accuracy", False))
    with pytest.raises(TunerSetupError, match=r"smaller_is_better: true"):
        searcher_section(tuner, custom_config("val_loss", False))
    twice = keras_tuner.RandomSearch(
        objective="val_loss", max_trials=2, executions_per_trial=2, **common
    )
    with pytest.raises(TunerSetupError, match="executions_per_trial is 2"):
        searcher_section(twice, custom_config("val_loss", True))
    band = keras_tuner.Hyperband(objective="val_loss", max_epochs=4, **common)
    with pytest.raises(TunerSetupError, match=r"searcher\.max_length: \{'epochs': 4\}"):
        searcher_section(band, custom_config("val_loss", True))
    several = keras_tuner.RandomSearch(objective=["val_loss", "loss"], max_trials=2, **common)
    with pytest.raises(TunerSetupError, match="several metrics"):
        searcher_section(several, custom_config("val_loss", True))
    grid = keras_tuner.GridSearch(objective="val_loss", max_trials=1, **common)
    with pytest.raises(TunerSetupError, match=r"max_trials=1\) stops before the grid's 2"):
        searcher_section(grid, custom_config("val_loss", True), grid_points=2)
