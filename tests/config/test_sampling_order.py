"""Sampling does not depend on the hyperparameters mapping's key order (a store may change it:
PostgreSQL's ``jsonb`` sorts keys by length, then bytes): the same rng gives the same values,
and a grid the same points in the same order, however the keys (nested ones too) are ordered.
The values come back in the space's own key order."""

from __future__ import annotations

import random
from typing import Any

from hypothesis import given, settings
from hypothesis import strategies as st

from pedl.config import canonical_order, grid_hparams, sample_hparams

# Names that sort differently by code point than by length first (jsonb's order).
NAMES = st.text(alphabet="abAB_-", min_size=1, max_size=4)
BOUNDS = st.tuples(st.integers(-5, 5), st.integers(0, 4)).map(lambda t: (t[0], t[0] + t[1]))
COUNT = st.integers(1, 3)
VALUE = st.one_of(st.integers(-3, 3), st.text(alphabet="xyz", max_size=2), st.booleans())

LEAF = st.one_of(
    VALUE,  # a bare value is a const
    st.builds(lambda v: {"type": "const", "val": v}, VALUE),
    st.builds(
        lambda b, n: {"type": "int", "minval": b[0], "maxval": b[1], "count": n}, BOUNDS, COUNT
    ),
    st.builds(
        lambda b, n: {"type": "double", "minval": b[0], "maxval": b[1] + 0.5, "count": n},
        BOUNDS,
        COUNT,
    ),
    st.builds(
        lambda b, n, base: {
            "type": "log",
            "minval": b[0],
            "maxval": b[1],
            "base": base,
            "count": n,
        },
        BOUNDS,
        COUNT,
        st.sampled_from([2, 10]),
    ),
    st.builds(
        lambda vals: {"type": "categorical", "vals": vals},
        st.lists(VALUE, min_size=1, max_size=3),
    ),
)
SPACES: st.SearchStrategy[dict[str, Any]] = st.recursive(
    st.dictionaries(NAMES, LEAF, max_size=4),
    lambda groups: st.dictionaries(NAMES, st.one_of(LEAF, groups), max_size=4),
    max_leaves=6,
)


def permuted(space: dict[str, Any], data: st.DataObject) -> dict[str, Any]:
    """``space`` with its keys (and every nested group's) in an order hypothesis draws."""
    order = data.draw(st.permutations(list(space)))
    return {
        name: permuted(space[name], data)
        if isinstance(space[name], dict) and "type" not in space[name]
        else space[name]
        for name in order
    }


def key_orders(values: Any) -> list[list[str]]:
    """Every mapping's key order in ``values``, depth first."""
    if not isinstance(values, dict):
        return []
    found = [list(values)]
    for value in values.values():
        found.extend(key_orders(value))
    return found


@settings(max_examples=150)
@given(space=SPACES, seed=st.integers(0, 2**32), data=st.data())
def test_random_draws_do_not_depend_on_the_key_order(
    space: dict[str, Any], seed: int, data: st.DataObject
) -> None:
    other = permuted(space, data)
    rng, other_rng = random.Random(seed), random.Random(seed)
    for _ in range(3):  # and the rng is left in the same state
        drawn, other_drawn = sample_hparams(space, rng), sample_hparams(other, other_rng)
        assert drawn == other_drawn
        assert key_orders(other_drawn) == key_orders(_shaped_like(other_drawn, other))


@settings(max_examples=150)
@given(space=SPACES, data=st.data())
def test_grid_points_and_their_order_do_not_depend_on_the_key_order(
    space: dict[str, Any], data: st.DataObject
) -> None:
    other = permuted(space, data)
    points, other_points = grid_hparams(space), grid_hparams(other)
    assert points == other_points  # the same points, in the same order
    for point in other_points:
        assert key_orders(point) == key_orders(_shaped_like(point, other))


def _shaped_like(values: dict[str, Any], space: dict[str, Any]) -> dict[str, Any]:
    """``values`` rebuilt in the key order of ``space`` (the order results must have)."""
    return {
        name: _shaped_like(values[name], space[name])
        if isinstance(space[name], dict) and "type" not in space[name]
        else values[name]
        for name in space
        if name in values
    }


def test_the_canonical_order_is_by_code_point_not_by_length() -> None:
    space = {"learning_rate": 1, "b": 2, "B": 3, "filters": 4, "_": 5}
    assert canonical_order(space) == ["B", "_", "b", "filters", "learning_rate"]


def test_a_known_draw_in_the_canonical_order() -> None:
    """Draws go in sorted path order: ``a.x`` (the group ``a``'s member), then ``b``, then
    ``c``, whatever the order written."""
    space = {
        "c": {"type": "int", "minval": 0, "maxval": 1000},
        "a": {"x": {"type": "int", "minval": 0, "maxval": 1000}},
        "b": {"type": "int", "minval": 0, "maxval": 1000},
    }
    rng = random.Random(5)
    a_x, b, c = (rng.randint(0, 1000) for _ in range(3))
    drawn = sample_hparams(space, random.Random(5))
    assert drawn == {"c": c, "a": {"x": a_x}, "b": b}
    assert list(drawn) == ["c", "a", "b"]
