"""Every built-in searcher runs the same search whatever the key order of the
hyperparameters mapping (nested groups included): a store may change it (PostgreSQL's
``jsonb`` sorts keys by length, then bytes), and the master builds the searcher from the
stored config. Whole searches are simulated, metrics fed back, so the later (model-based)
draws of tpe and the promotions of ASHA are compared too."""

from __future__ import annotations

import math
from typing import Any

import pytest
from searcher_sim import simulate

from pedl.config import ExperimentConfig
from pedl.searcher import make_search_method, missing_optuna_requirements

SPACE: dict[str, Any] = {
    "learning_rate": {"type": "log", "minval": -4, "maxval": -1, "count": 2},
    "units": {"type": "int", "minval": 4, "maxval": 64, "count": 2},
    "optimizer": {
        "momentum": {"type": "double", "minval": 0.5, "maxval": 0.99, "count": 2},
        "kind": {"type": "categorical", "vals": ["sgd", "adam", "rmsprop"]},
        "b": 1,
    },
    "dropout": {"type": "double", "minval": 0.0, "maxval": 0.5, "count": 2},
    "global_batch_size": 16,
}

SEARCHERS: dict[str, dict[str, Any]] = {
    "random": {"max_trials": 6},
    "grid": {},
    "async_halving": {"num_rungs": 3, "divisor": 2, "max_trials": 8},
    "adaptive_asha": {"max_trials": 8, "mode": "standard"},
    "tpe": {"max_trials": 8, "n_startup_trials": 3, "max_concurrent_trials": 2},
}


def reversed_keys(space: dict[str, Any]) -> dict[str, Any]:
    """``space`` with the keys of it and of every nested group in reverse order."""
    return {
        name: reversed_keys(spec) if isinstance(spec, dict) and "type" not in spec else spec
        for name, spec in reversed(space.items())
    }


def metric(hparams: dict[str, Any]) -> float:
    return (
        (math.log10(hparams["learning_rate"]) + 2) ** 2
        + hparams["dropout"]
        + hparams["optimizer"]["momentum"]
        + hparams["units"] / 64
    )


def search(name: str, space: dict[str, Any]) -> list[tuple[int, int, dict[str, Any]]]:
    config = ExperimentConfig.model_validate(
        {
            "searcher": {
                "name": name,
                "metric": "loss",
                "max_length": {"batches": 64},
                **SEARCHERS[name],
            },
            "hyperparameters": space,
            "reproducibility": {"experiment_seed": 3},
        }
    )
    transcript = simulate(make_search_method(config), order_seed=1, metric=metric)
    return [(c.request_id, c.trial_seed, c.hparams) for c in transcript.creates]


@pytest.mark.parametrize("name", list(SEARCHERS))
def test_a_search_does_not_depend_on_the_key_order(name: str) -> None:
    if name == "tpe" and missing_optuna_requirements("tpe") is not None:
        pytest.skip(str(missing_optuna_requirements("tpe")))
    written = search(name, SPACE)
    other = search(name, reversed_keys(SPACE))
    assert list(SPACE) != list(reversed_keys(SPACE))
    assert len(written) >= 6
    assert other == written
    # Each trial's values come in the key order of the config the searcher was built from.
    assert [list(h) for _, _, h in other] == [list(reversed_keys(SPACE))] * len(other)
    assert [list(h["optimizer"]) for _, _, h in written] == [["momentum", "kind", "b"]] * len(
        written
    )
