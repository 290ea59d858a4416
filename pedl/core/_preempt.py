"""Should this trial stop now (pause, kill, searcher stop, node drain)?"""

from __future__ import annotations

import signal
import threading
from collections.abc import Callable
from types import FrameType
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from pedl.core._distributed import DistributedContext


class PreemptContext:
    """Asked by the controller between chunks; a True answer means checkpoint and exit.

    With several workers (``distributed`` of size > 1) every worker asks in step: the chief
    asks the platform and broadcasts its answer, so that all workers stop at the same batch
    (Determined's ``WorkersAskChief``).
    """

    def __init__(
        self,
        should_preempt: Callable[[], bool],
        distributed: DistributedContext | None = None,
    ) -> None:
        self._should_preempt = should_preempt
        self._dist = distributed if distributed is not None and distributed.size > 1 else None

    def ask_platform(self) -> bool:
        """The platform's answer, asked by this worker alone (no collective: the chief's own
        use)."""
        return bool(self._should_preempt())

    def should_preempt(self) -> bool:
        if self._dist is None:
            return self._should_preempt()
        if self._dist.is_chief:
            return bool(self._dist.broadcast(bool(self._should_preempt())))
        return bool(self._dist.broadcast(None))


class SignalPreemption:
    """Local stand-in: SIGINT or SIGTERM asks the trial to stop at the next chunk boundary.

    A second SIGINT raises KeyboardInterrupt at once. Use as a context manager; the previous
    handlers are restored on exit. Must be entered from the main thread.
    """

    def __init__(self) -> None:
        self._event = threading.Event()
        self._previous: dict[int, object] = {}

    def requested(self) -> bool:
        return self._event.is_set()

    def request(self) -> None:
        self._event.set()

    def _handle(self, signum: int, frame: FrameType | None) -> None:
        if signum == signal.SIGINT and self._event.is_set():
            raise KeyboardInterrupt
        self._event.set()

    def __enter__(self) -> SignalPreemption:
        for sig in (signal.SIGINT, signal.SIGTERM):
            self._previous[sig] = signal.signal(sig, self._handle)
        return self

    def __exit__(self, *exc: object) -> None:
        for sig, handler in self._previous.items():
            signal.signal(sig, handler)  # type: ignore[arg-type]
        self._previous.clear()
