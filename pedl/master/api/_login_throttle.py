"""Throttling of password guessing at ``POST /auth/login`` and
``POST /users/{name}/password`` (one's own ``old_password``).

Both routes share one throttle: a guess at either counts for both. Each attempt counts
against its username and against the client's address until it proves right: after
``max_failures`` attempts for a username (``max_failures_per_address`` from an address)
within ``window_seconds``, the next one is answered 429 with ``Retry-After`` until the
oldest of them leaves the window, and its password is not checked at all, so guessing
costs the master no argon2 verification (the point of a slow hash is lost when an attacker
can make the master compute it at will). A right password clears its username's count
(not its address's: signing in to one's own account does not buy more guesses at others).

An attempt is counted when it begins, before its password is checked, so concurrent
attempts cannot slip past the limit; a correct one is taken back.

The counts live in the memory of the master process, which alone serves ``POST`` routes
(its read processes serve GETs only, see :mod:`._forward`): they start empty when the
master starts. A username or address is counted as given (an unknown username is counted
too, so the answer does not tell which usernames exist). At most :data:`MAX_KEYS` usernames
and addresses are tracked; past that, those whose attempts have all left the window are
dropped, then the oldest.
"""

from __future__ import annotations

import math
import threading
import time
from collections import deque
from collections.abc import Callable

MAX_KEYS = 100_000
"""The most usernames and addresses tracked at once (a bound on the throttle's memory)."""


class LoginThrottle:
    """The attempts at signing in per username and per address (see the module's docstring).
    Thread-safe: login handlers run on worker threads."""

    def __init__(
        self,
        *,
        max_failures: int,
        max_failures_per_address: int,
        window_seconds: float,
        clock: Callable[[], float] = time.monotonic,
    ) -> None:
        self.max_failures = max_failures
        self.max_failures_per_address = max_failures_per_address
        self.window_seconds = window_seconds
        self._clock = clock
        self._lock = threading.Lock()
        self._attempts: dict[tuple[str, str], deque[float]] = {}

    def begin(self, username: str, address: str) -> int | None:
        """Count an attempt for ``username`` from ``address`` and return ``None``; or, when
        either is over its limit, count nothing and return the seconds until it may try
        again (at least 1)."""
        now = self._clock()
        keys = (("user", username), ("address", address))
        limits = (self.max_failures, self.max_failures_per_address)
        with self._lock:
            wait = 0.0
            for key, limit in zip(keys, limits, strict=True):
                times = self._attempts.get(key)
                if times is not None and len(times) >= limit:
                    wait = max(wait, times[-limit] + self.window_seconds - now)
            if wait > 0:
                return max(1, math.ceil(wait))
            for key, limit in zip(keys, limits, strict=True):
                times = self._attempts.get(key)
                if times is None:
                    self._make_room(now)
                    times = self._attempts[key] = deque(maxlen=limit)
                times.append(now)
        return None

    def succeeded(self, username: str, address: str) -> None:
        """The attempt begun for ``username`` from ``address`` was right: forget the
        username's attempts and take this one back from the address's count."""
        with self._lock:
            self._attempts.pop(("user", username), None)
            times = self._attempts.get(("address", address))
            if times:
                times.pop()

    def _make_room(self, now: float) -> None:
        """Called with the lock held before a key is added."""
        if len(self._attempts) < MAX_KEYS:
            return
        horizon = now - self.window_seconds
        stale = [key for key, times in self._attempts.items() if not times or times[-1] <= horizon]
        for key in stale:
            del self._attempts[key]
        while len(self._attempts) >= MAX_KEYS:
            del self._attempts[next(iter(self._attempts))]
