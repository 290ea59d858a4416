"""The benchmarks' repetition rule (``bench/_env.py``): the median's order-statistic interval
covers what it says, and ``repeat_until_narrow`` stops at the first narrow repetition within
its bounds. Pure functions: no benchmark is run."""

from __future__ import annotations

import importlib.util
import itertools
import math
import random
import statistics
import subprocess
import sys
from pathlib import Path
from types import ModuleType

import pytest
from hypothesis import given
from hypothesis import strategies as st

BENCH_ENV = Path(__file__).parents[2] / "bench" / "_env.py"


def _load() -> ModuleType:
    spec = importlib.util.spec_from_file_location("pedl_bench_env", BENCH_ENV)
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    sys.modules[spec.name] = module
    spec.loader.exec_module(module)
    return module


env = _load()

finite = st.floats(min_value=-1e6, max_value=1e6, allow_nan=False)
samples = st.lists(finite, min_size=1, max_size=60)


def brute_coverage(n: int, low_rank: int) -> float:
    """P(x_(k) <= true median <= x_(n+1-k)), counted over the 2^n equally likely patterns of
    values below/above a continuous distribution's median."""
    inside = sum(
        1 for signs in itertools.product((0, 1), repeat=n) if low_rank <= sum(signs) <= n - low_rank
    )
    return inside / 2**n


@given(samples)
def test_interval_brackets_the_median_within_the_range(values: list[float]) -> None:
    interval = env.median_interval(values)
    assert min(values) <= interval.low <= interval.median <= interval.high <= max(values)
    assert interval.median == statistics.median(values)
    assert interval.n == len(values)


@given(samples, st.randoms(use_true_random=False))
def test_interval_ignores_order(values: list[float], rng: random.Random) -> None:
    shuffled = list(values)
    rng.shuffle(shuffled)
    assert env.median_interval(shuffled) == env.median_interval(values)


@given(st.integers(min_value=1, max_value=14), st.sampled_from([0.5, 0.8, 0.9, 0.95, 0.99]))
def test_coverage_is_exact_and_the_narrowest_that_reaches_the_confidence(
    n: int, confidence: float
) -> None:
    values = [float(i) for i in range(n)]  # distinct: the ranks are the values
    interval = env.median_interval(values, confidence)
    k = int(interval.low) + 1
    assert interval.high == n - k
    assert math.isclose(interval.coverage, brute_coverage(n, k))
    if brute_coverage(n, 1) >= confidence:
        assert interval.coverage >= confidence
        # one rank narrower on each side would cover less than asked
        if k + 1 <= (n + 1) // 2:
            assert brute_coverage(n, k + 1) < confidence
    else:
        assert (interval.low, interval.high) == (0.0, n - 1.0)  # the whole range


def test_95_percent_needs_six_values() -> None:
    assert env.median_interval([1.0, 2, 3, 4, 5]).coverage < 0.95
    assert env.median_interval([1.0, 2, 3, 4, 5, 6]).coverage >= 0.95


@given(samples, st.floats(min_value=0.01, max_value=100))
def test_interval_scales_with_the_values(values: list[float], scale: float) -> None:
    interval = env.median_interval(values)
    scaled = env.median_interval([v * scale for v in values])
    assert math.isclose(scaled.low, interval.low * scale, rel_tol=1e-9, abs_tol=1e-9)
    assert math.isclose(scaled.high, interval.high * scale, rel_tol=1e-9, abs_tol=1e-9)


@given(
    st.lists(st.floats(min_value=0.1, max_value=10), min_size=1, max_size=40),
    st.integers(min_value=1, max_value=20),
    st.integers(min_value=0, max_value=20),
    st.floats(min_value=0.0, max_value=0.5),
)
def test_repeat_stops_at_the_first_narrow_repetition_within_its_bounds(
    stream: list[float], min_reps: int, extra: int, rel: float
) -> None:
    max_reps = min_reps + extra
    calls: list[int] = []

    def measure(rep: int) -> float:
        calls.append(rep)
        return stream[rep % len(stream)]

    result = env.repeat_until_narrow(
        measure, min_reps=min_reps, max_reps=max_reps, rel_halfwidth=rel
    )
    fed = [stream[i % len(stream)] for i in range(result.reps)]
    assert calls == list(range(result.reps))
    assert min_reps <= result.reps <= max_reps
    assert result.values == {"value": fed}
    assert result.intervals["value"] == env.median_interval(fed)
    assert result.narrow == env.is_narrow(env.median_interval(fed), rel)
    if result.reps < max_reps:
        assert result.narrow
    if result.reps > min_reps:  # it went on only while not narrow
        assert not env.is_narrow(env.median_interval(fed[:-1]), rel)


@given(st.floats(min_value=0.1, max_value=10), st.integers(min_value=1, max_value=12))
def test_steady_figures_stop_once_95_percent_is_covered(value: float, min_reps: int) -> None:
    result = env.repeat_until_narrow(
        lambda rep: value, min_reps=min_reps, max_reps=50, rel_halfwidth=0.01
    )
    assert result.narrow
    assert result.reps == max(min_reps, 6)


def test_several_figures_stop_when_all_are_narrow() -> None:
    def measure(rep: int) -> dict[str, float]:
        return {"steady": 2.0, "noisy": 1.0 + (rep % 2)}

    result = env.repeat_until_narrow(measure, min_reps=2, max_reps=10, rel_halfwidth=0.1)
    assert (result.reps, result.narrow) == (10, False)
    assert env.is_narrow(result.intervals["steady"], 0.1)
    assert result.as_dict()["figures"]["noisy"]["n"] == 10
    with pytest.raises(ValueError):
        env.repeat_until_narrow(lambda rep: 1.0, min_reps=3, max_reps=2, rel_halfwidth=0.1)
    with pytest.raises(ValueError):
        env.repeat_until_narrow(
            lambda rep: {"a": 1.0} if rep == 0 else {"b": 1.0},
            min_reps=3,
            max_reps=5,
            rel_halfwidth=0.1,
        )


def test_machine_and_load_are_recorded_without_a_framework() -> None:
    info = env.machine()
    assert info["vcpus"] >= 1 and info["cpu"] and info["python"]
    load = env.Load.start()
    fields = load.stop()
    assert len(fields["loadavg_before"]) == 3 and len(fields["loadavg_after"]) == 3
    assert env.load_range([fields])[0] <= env.load_range([fields])[1]
    # a benchmark that does not train must not pay for TensorFlow through this module
    probe = (
        "import sys; sys.path.insert(0, sys.argv[1]); import _env; _env.machine(); "
        "assert 'tensorflow' not in sys.modules and 'pedl' not in sys.modules"
    )
    subprocess.run([sys.executable, "-c", probe, str(BENCH_ENV.parent)], check=True)
