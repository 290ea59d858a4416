"""One rule for how long a test waits for real work (a page, a master, a trial, a process):
the seconds it would need on an otherwise idle machine, times :data:`SCALE`.

``SCALE`` is ``PEDL_TEST_WAIT_SCALE`` where set; else 1 plus the machine's load per core
when the test session starts (the 1-minute load average over the CPU count: each process
already running on each core roughly doubles, then triples, how long the tests' own work
takes), at most :data:`MAX_SCALE`. The first import sets the variable, so pytest-xdist's
workers, started by the session afterwards, use the controller's factor, not their own.

A wait is an upper bound: a passing test returns as soon as what it waits for happens, so
scaling never slows it; only a failing one takes longer to say so. Pauses that are part of
what a test asserts (nothing happens within N s, a rate over N s) are not waits for work and
are not scaled.
"""

from __future__ import annotations

import os
import time
from collections.abc import Callable
from typing import Any

ENV = "PEDL_TEST_WAIT_SCALE"
MAX_SCALE = 6.0


def _scale() -> float:
    given = os.environ.get(ENV, "").strip()
    if given:
        value = float(given)
        if not value > 0:
            raise ValueError(f"{ENV}={given!r}: a factor above 0")
        return value
    try:
        load = os.getloadavg()[0]
    except OSError:  # no load average on this platform
        return 1.0
    return min(MAX_SCALE, 1.0 + load / (os.cpu_count() or 1))


SCALE = _scale()
os.environ[ENV] = repr(SCALE)


def scaled(seconds: float) -> float:
    """``seconds`` times :data:`SCALE`."""
    return seconds * SCALE


def scaled_ms(seconds: float) -> float:
    """``seconds`` times :data:`SCALE`, in milliseconds (Playwright's timeouts)."""
    return seconds * SCALE * 1000


def until(condition: Callable[[], Any], what: str, timeout: float = 60, every: float = 0.1) -> Any:
    """Call ``condition`` every ``every`` seconds until it returns something true, and return
    that; fail naming ``what`` after ``timeout`` seconds (:func:`scaled`)."""
    deadline = time.monotonic() + scaled(timeout)
    while not (value := condition()):
        assert time.monotonic() < deadline, f"timed out waiting for {what}"
        time.sleep(every)
    return value
