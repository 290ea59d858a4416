"""Hyperparameter sampling, grids (Determined's semantics) and flattening."""

from __future__ import annotations

import math
import random
from pathlib import Path

import pytest

from pedl.config import ConfigError, flatten_hparams, grid_hparams, load_config, sample_hparams

DATA = Path(__file__).parent / "data"

SPACE = {
    "global_batch_size": 32,
    "lr": {"type": "log", "minval": -5, "maxval": -1},
    "dropout": {"type": "double", "minval": 0.1, "maxval": 0.5},
    "units": {"type": "int", "minval": 8, "maxval": 12},
    "optimizer": {
        "name": {"type": "categorical", "vals": ["adam", "sgd", "rmsprop"]},
        "momentum": {"type": "double", "minval": 0.0, "maxval": 0.99},
        "fixed": {"type": "const", "val": [1, 2]},
    },
}


def test_sample_draws_within_the_space() -> None:
    rng = random.Random(0)
    for _ in range(200):
        hp = sample_hparams(SPACE, rng)
        assert hp["global_batch_size"] == 32
        assert 1e-5 <= hp["lr"] <= 1e-1
        assert 0.1 <= hp["dropout"] <= 0.5
        assert isinstance(hp["units"], int) and 8 <= hp["units"] <= 12
        assert hp["optimizer"]["name"] in ("adam", "sgd", "rmsprop")
        assert 0.0 <= hp["optimizer"]["momentum"] <= 0.99
        assert hp["optimizer"]["fixed"] == [1, 2]


def test_int_sampling_covers_both_ends() -> None:
    rng = random.Random(1)
    seen = {
        sample_hparams({"n": {"type": "int", "minval": 1, "maxval": 3}}, rng)["n"]
        for _ in range(100)
    }
    assert seen == {1, 2, 3}


def test_log_sampling_is_uniform_in_the_exponent() -> None:
    rng = random.Random(2)
    space = {"lr": {"type": "log", "minval": -4, "maxval": 0, "base": 2}}
    exponents = [math.log2(sample_hparams(space, rng)["lr"]) for _ in range(2000)]
    assert min(exponents) >= -4 and max(exponents) <= 0
    below_half = sum(e < -2 for e in exponents) / len(exponents)
    assert 0.45 < below_half < 0.55


def test_same_seed_same_draws_different_seed_different() -> None:
    first = [sample_hparams(SPACE, random.Random(42)) for _ in range(3)]
    again = [sample_hparams(SPACE, random.Random(42)) for _ in range(3)]
    assert first == again
    other = sample_hparams(SPACE, random.Random(43))
    assert other != first[0]
    rng = random.Random(42)
    sequence = [sample_hparams(SPACE, rng) for _ in range(3)]
    assert sequence[0] == first[0] and sequence[1] != sequence[0]


def test_sample_accepts_a_validated_space() -> None:
    config = load_config(DATA / "random.yaml")
    raw = sample_hparams(
        {
            "global_batch_size": {"type": "categorical", "vals": [32, 64, 128]},
            "learning_rate": {"type": "log", "minval": -5, "maxval": -1, "base": 10},
            "dropout": {"type": "double", "minval": 0.0, "maxval": 0.5},
            "n_filters": {"type": "int", "minval": 8, "maxval": 64},
        },
        random.Random(7),
    )
    typed = sample_hparams(config.hyperparameters, random.Random(7))
    assert raw == typed


def test_sampled_consts_are_copies() -> None:
    space = {"layers": [1, 2]}
    first = sample_hparams(space, random.Random(0))
    first["layers"].append(3)
    assert sample_hparams(space, random.Random(0))["layers"] == [1, 2]


def test_invalid_space_is_a_config_error() -> None:
    with pytest.raises(ConfigError) as info:
        sample_hparams({"x": {"type": "int", "minval": "a", "maxval": 2}}, random.Random(0))
    (issue,) = info.value.issues
    assert issue.path == "hyperparameters.x.minval"
    assert issue.message == "expected an integer, got 'a'"


@pytest.mark.parametrize(
    ("spec", "values"),
    [
        ({"type": "int", "minval": 0, "maxval": 10, "count": 3}, [0, 5, 10]),
        # Rounded half away from zero, like Go's math.Round: 0, 2.5 -> 3, 5.
        ({"type": "int", "minval": 0, "maxval": 5, "count": 3}, [0, 3, 5]),
        # count capped at the number of integers in the range, so no repeats.
        ({"type": "int", "minval": 1, "maxval": 3, "count": 10}, [1, 2, 3]),
        ({"type": "int", "minval": 1, "maxval": 4, "count": 1}, [3]),
        ({"type": "int", "minval": -4, "maxval": -1, "count": 1}, [-3]),
        ({"type": "double", "minval": 0.0, "maxval": 1.0, "count": 5}, [0, 0.25, 0.5, 0.75, 1]),
        ({"type": "double", "minval": 0.2, "maxval": 0.6, "count": 1}, [0.4]),
        ({"type": "log", "minval": -3, "maxval": -1, "count": 3}, [1e-3, 1e-2, 1e-1]),
        ({"type": "log", "minval": 1, "maxval": 3, "base": 2, "count": 1}, [4.0]),
        ({"type": "categorical", "vals": ["a", "b", "c"]}, ["a", "b", "c"]),
        ({"type": "const", "val": 7}, [7]),
        ("bare", ["bare"]),
    ],
)
def test_grid_values_per_type(spec: object, values: list[object]) -> None:
    points = grid_hparams({"x": spec})
    got = [point["x"] for point in points]
    assert got == pytest.approx(values)


def test_grid_is_a_cartesian_product_in_sorted_name_order() -> None:
    points = grid_hparams(
        {
            "b": {"type": "categorical", "vals": [1, 2]},
            "a": {"type": "categorical", "vals": ["x", "y", "z"]},
            "c": 0,
        }
    )
    # 'a' is the first axis (sorted names) and varies slowest.
    assert [(p["a"], p["b"], p["c"]) for p in points] == [
        ("x", 1, 0),
        ("x", 2, 0),
        ("y", 1, 0),
        ("y", 2, 0),
        ("z", 1, 0),
        ("z", 2, 0),
    ]


def test_grid_example_count_and_nesting() -> None:
    config = load_config(DATA / "grid.yaml")
    points = grid_hparams(config.hyperparameters)
    # learning_rate 3 x dropout 2 x dense.units 3 x dense.activation 2 x batch size 1.
    assert len(points) == 36
    assert len({repr(sorted(flatten_hparams(p).items())) for p in points}) == 36
    first = points[0]
    assert first["dense"] == {"activation": "relu", "units": 64}
    assert first["global_batch_size"] == 32
    assert {p["dense"]["units"] for p in points} == {64, 160, 256}
    assert sorted({p["learning_rate"] for p in points}) == pytest.approx([1e-4, 1e-3, 1e-2])


def test_grid_of_an_empty_space_is_one_empty_point() -> None:
    assert grid_hparams({}) == [{}]


def test_grid_needs_counts() -> None:
    with pytest.raises(ConfigError) as info:
        grid_hparams(
            {
                "lr": {"type": "double", "minval": 0, "maxval": 1},
                "opt": {"m": {"type": "int", "minval": 0, "maxval": 3}},
                "ok": {"type": "log", "minval": 0, "maxval": 1, "count": 2},
            }
        )
    assert [issue.path for issue in info.value.issues] == [
        "hyperparameters.lr.count",
        "hyperparameters.opt.m.count",
    ]
    assert "needs 'count'" in info.value.issues[1].message
    assert "'opt.m'" in info.value.issues[1].message


def test_flatten_hparams() -> None:
    assert flatten_hparams({"optimizer": {"lr": 1}}) == {"optimizer.lr": 1}
    assert flatten_hparams({"a": 1, "b": {"c": {"d": [2]}, "e": "x"}}) == {
        "a": 1,
        "b.c.d": [2],
        "b.e": "x",
    }
    assert flatten_hparams({}) == {}
    nested = sample_hparams(SPACE, random.Random(3))
    flat = flatten_hparams(nested)
    assert set(flat) == {
        "global_batch_size",
        "lr",
        "dropout",
        "units",
        "optimizer.name",
        "optimizer.momentum",
        "optimizer.fixed",
    }
    assert flat["optimizer.name"] == nested["optimizer"]["name"]
