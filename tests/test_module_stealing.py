"""Where the test scheduler cuts a queue of tests (:mod:`tests.module_stealing`)."""

from __future__ import annotations

from hypothesis import given
from hypothesis import strategies as st

from tests.module_stealing import module_edge


@st.composite
def queues(draw: st.DrawFn) -> tuple[list[str], int, int, int]:
    modules = draw(st.lists(st.sampled_from("abcd"), min_size=2, max_size=40))
    low = draw(st.integers(1, len(modules) - 1))
    high = draw(st.integers(low, len(modules) - 1))
    cut = draw(st.integers(low, high))
    return modules, cut, low, high


@given(queues())
def test_the_cut_moves_to_the_nearest_module_edge_in_range(
    queue: tuple[list[str], int, int, int],
) -> None:
    modules, cut, low, high = queue
    edges = [i for i in range(low, high + 1) if modules[i - 1] != modules[i]]
    moved = module_edge(modules, cut, low, high)
    if not edges:
        assert moved == cut
    else:
        assert moved in edges
        assert abs(moved - cut) == min(abs(i - cut) for i in edges)


def test_a_cut_inside_a_module_moves_out_of_it() -> None:
    modules = ["a"] * 3 + ["b"] * 5 + ["c"] * 2
    assert module_edge(modules, 5, 1, 9) == 3
    assert module_edge(modules, 7, 1, 9) == 8
    assert module_edge(modules, 5, 4, 7) == 5  # no edge in range: where it was
