"""What every benchmark records with its figures, and how many repetitions it takes.

Imports nothing heavy (no TensorFlow, no PEDL): a benchmark that does not train imports this
without paying for a framework.

- :func:`machine`: the CPU model, vCPUs, Python and (where the process has loaded them)
  TensorFlow/Keras versions, and the commit measured;
- :func:`load_average`, :class:`Load`: the machine's load average sampled before and after
  each measured figure (the machine is often shared: a figure means little without it);
- :func:`median_interval`, :func:`repeat_until_narrow`: repetitions until the median's ~95%
  interval (distribution-free, from order statistics) is narrow enough.
- :func:`emit`: a result as one JSON line, printed and appended to the run's file.
"""

from __future__ import annotations

import functools
import json
import math
import os
import platform
import statistics
import subprocess
import sys
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parents[1]


def emit(result: Mapping[str, Any], out: Path | None) -> None:
    """Print ``result`` as one JSON line, and append it to ``out`` where given."""
    line = json.dumps(result)
    print(line, flush=True)
    if out is not None:
        with out.open("a") as file:
            file.write(line + "\n")


def load_average() -> list[float]:
    """The machine's 1-, 5- and 15-minute load averages, rounded to 2 decimals."""
    return [round(value, 2) for value in os.getloadavg()]


def cpu_model() -> str:
    """The CPU's model name, family and model from ``/proc/cpuinfo`` (e.g. "AMD EPYC
    (family 25 model 17)"; ``platform.processor()`` where there is none)."""
    fields: dict[str, str] = {}
    try:
        for line in Path("/proc/cpuinfo").read_text().splitlines():
            key, _, value = line.partition(":")
            if not key.strip():
                break  # the first processor's block is enough
            fields.setdefault(key.strip(), value.strip())
    except OSError:
        pass
    name = fields.get("model name") or platform.processor() or platform.machine()
    if "cpu family" in fields and "model" in fields:
        name += f" (family {fields['cpu family']} model {fields['model']})"
    return name


@functools.cache
def _commit() -> str:
    try:
        return subprocess.run(
            ["git", "describe", "--always", "--dirty=+"],
            cwd=ROOT,
            capture_output=True,
            text=True,
            check=True,
        ).stdout.strip()
    except (OSError, subprocess.CalledProcessError):
        return "unknown"


def machine() -> dict[str, Any]:
    """The machine and code a figure was measured on: CPU model, vCPUs (and those this
    process may run on), Python, TensorFlow and Keras where this process has loaded them,
    and the commit (``+``: the tree had changes)."""
    info: dict[str, Any] = {
        "cpu": cpu_model(),
        "vcpus": os.cpu_count(),
        "python": platform.python_version(),
    }
    if hasattr(os, "sched_getaffinity"):
        info["usable_vcpus"] = len(os.sched_getaffinity(0))
    for name in ("tensorflow", "keras"):
        module = sys.modules.get(name)
        version = getattr(module, "__version__", None)
        if version:
            info[name] = str(version)
    info["commit"] = _commit()
    return info


@dataclass
class Load:
    """The load average around one measured figure::

    load = Load.start()
    ...  # measure
    row |= load.stop()  # {"loadavg_before": [...], "loadavg_after": [...]}
    """

    before: list[float] = field(default_factory=load_average)
    after: list[float] | None = None

    @classmethod
    def start(cls) -> Load:
        return cls()

    def stop(self) -> dict[str, list[float]]:
        """Samples the load now; returns both samples as a figure's fields."""
        self.after = load_average()
        return self.as_dict()

    def as_dict(self) -> dict[str, list[float]]:
        return {"loadavg_before": self.before, "loadavg_after": self.after or load_average()}


def load_range(rows: Sequence[Mapping[str, Any]]) -> list[float]:
    """The lowest and highest 1-minute load average sampled around ``rows``' figures."""
    seen = [
        row[key][0] for row in rows for key in ("loadavg_before", "loadavg_after") if row.get(key)
    ]
    return [min(seen), max(seen)] if seen else []


# Repetitions ---------------------------------------------------------------------------------


def _binomial_half_cdf(n: int, k: int) -> float:
    """P(B <= k) for B ~ Binomial(n, 1/2)."""
    return sum(math.comb(n, i) for i in range(k + 1)) / 2**n


@dataclass(frozen=True)
class Interval:
    """The median of ``values`` and its distribution-free interval: the order statistics
    x_(k) and x_(n+1-k) for the largest k whose coverage is at least the confidence asked.
    Where no k reaches it (n < 6 at 95%), the interval is the whole range [min, max] and
    ``coverage`` says what that range covers (e.g. 0.94 for 5 values)."""

    n: int
    median: float
    low: float
    high: float
    coverage: float

    @property
    def rel_halfwidth(self) -> float:
        """Half the interval's width over the median's magnitude (inf where the median is 0)."""
        half = (self.high - self.low) / 2
        return half / abs(self.median) if self.median else (0.0 if half == 0 else math.inf)

    def as_dict(self) -> dict[str, Any]:
        return {
            "median": self.median,
            "interval": [self.low, self.high],
            "coverage": round(self.coverage, 4),
            "rel_halfwidth": self.rel_halfwidth,
            "n": self.n,
        }


def median_interval(values: list[float], confidence: float = 0.95) -> Interval:
    """The median of ``values`` (at least one) and its order-statistic interval (pure)."""
    if not values:
        raise ValueError("median_interval of no values")
    ordered = sorted(values)
    n = len(ordered)
    # coverage of [x_(k), x_(n+1-k)] is 1 - 2 P(B <= k - 1); it falls as k grows
    k, coverage = 1, 1 - 2 * _binomial_half_cdf(n, 0)
    while k + 1 <= (n + 1) // 2:
        wider = 1 - 2 * _binomial_half_cdf(n, k)
        if wider < confidence:
            break
        k, coverage = k + 1, wider
    return Interval(
        n=n,
        median=statistics.median(ordered),
        low=ordered[k - 1],
        high=ordered[n - k],
        coverage=max(coverage, 0.0),
    )


@dataclass(frozen=True)
class Repeated:
    """What :func:`repeat_until_narrow` took: the repetitions, each figure's values and
    interval, and whether every interval was narrow (and covered the confidence) at the end."""

    reps: int
    narrow: bool
    rel_halfwidth: float
    confidence: float
    values: dict[str, list[float]]
    intervals: dict[str, Interval]

    def as_dict(self) -> dict[str, Any]:
        return {
            "reps": self.reps,
            "narrow": self.narrow,
            "goal_rel_halfwidth": self.rel_halfwidth,
            "confidence": self.confidence,
            "figures": {name: i.as_dict() for name, i in self.intervals.items()},
        }


def is_narrow(interval: Interval, rel_halfwidth: float, confidence: float = 0.95) -> bool:
    """The interval covers ``confidence`` and its half-width is within ``rel_halfwidth`` of
    the median."""
    return interval.coverage >= confidence and interval.rel_halfwidth <= rel_halfwidth


def repeat_until_narrow(
    measure: Callable[[int], float | Mapping[str, float]],
    *,
    min_reps: int,
    max_reps: int,
    rel_halfwidth: float,
    confidence: float = 0.95,
) -> Repeated:
    """Calls ``measure(rep)`` for rep = 0, 1, ... until every figure's median interval is
    narrow (:func:`is_narrow`), at least ``min_reps`` and at most ``max_reps`` times.

    ``measure`` returns one figure (a float, named ``"value"``) or several by name (the same
    names every time); the repetitions stop when all of them are narrow. Nothing else is
    kept between calls: the figures' values decide alone (pure but for ``measure``).
    """
    if not 1 <= min_reps <= max_reps:
        raise ValueError(f"need 1 <= min_reps ({min_reps}) <= max_reps ({max_reps})")
    values: dict[str, list[float]] = {}
    intervals: dict[str, Interval] = {}
    narrow = False
    rep = 0
    while rep < max_reps:
        figures = measure(rep)
        rep += 1
        named = {"value": figures} if isinstance(figures, int | float) else dict(figures)
        if values and named.keys() != values.keys():
            raise ValueError(f"figures changed from {sorted(values)} to {sorted(named)}")
        for name, value in named.items():
            values.setdefault(name, []).append(float(value))
        intervals = {name: median_interval(v, confidence) for name, v in values.items()}
        narrow = all(is_narrow(i, rel_halfwidth, confidence) for i in intervals.values())
        if rep >= min_reps and narrow:
            break
    return Repeated(
        reps=rep,
        narrow=narrow,
        rel_halfwidth=rel_halfwidth,
        confidence=confidence,
        values=values,
        intervals=intervals,
    )
