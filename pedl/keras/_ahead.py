"""A Sequence's items loaded ahead of their use by worker threads or processes, owned by the
trial: a ``SequenceAdapter``'s ``workers`` and ``use_multiprocessing``.

Keras's own loader for a ``PyDataset`` with workers (its enqueuer) stops only at the end of
an epoch of ``fit``; a trial's ``fit`` over an endless Sequence ends at a chunk boundary,
mid-epoch, so each trial left a running enqueuer behind (its thread pool and handlers, six
threads with two workers, for the rest of the process: a warm worker's next trials, a local
search's). This loader is closed when ``fit`` returns.
"""

from __future__ import annotations

import multiprocessing
import threading
from collections.abc import Callable
from concurrent.futures import Executor, Future, ProcessPoolExecutor, ThreadPoolExecutor
from typing import Any

_sequence: Any = None
"""The Sequence, in a loader process (set once, when the process starts)."""


def _set_sequence(sequence: Any) -> None:
    global _sequence
    _sequence = sequence


def _item(index: int) -> Any:
    return _sequence[index]


class AheadLoader:
    """Loads ``sequence[position(i)]`` for the next ``depth`` global indices ``i`` in
    ``workers`` threads (or processes), and hands them out in order.

    ``position`` maps a global index onto an index of ``sequence``; it runs in the caller's
    thread. Items are a pure function of the index, so what is loaded where does not change
    what training sees."""

    def __init__(
        self,
        sequence: Any,
        position: Callable[[int], int],
        *,
        workers: int,
        processes: bool,
        depth: int,
    ) -> None:
        self._position = position
        self._depth = max(1, depth)
        self._lock = threading.Lock()
        self._ahead: dict[int, Future[Any]] = {}
        self._load: Callable[[int], Any]
        self._pool: Executor
        if processes:
            self._pool = ProcessPoolExecutor(
                workers,
                mp_context=multiprocessing.get_context(),
                initializer=_set_sequence,
                initargs=(sequence,),
            )
            self._load = _item
        else:
            self._pool = ThreadPoolExecutor(workers, thread_name_prefix="pedl-sequence-loader")
            self._load = sequence.__getitem__

    def get(self, index: int) -> Any:
        """The item of global index ``index``; the next ones start loading."""
        with self._lock:
            for i in range(index, index + self._depth):
                if i not in self._ahead:
                    self._ahead[i] = self._pool.submit(self._load, self._position(i))
            for i in [i for i in self._ahead if i < index]:
                self._ahead.pop(i).cancel()
            future = self._ahead.pop(index)
        return future.result()

    def close(self) -> None:
        """Stop loading: what is queued is dropped, the workers end (waited for)."""
        with self._lock:
            self._ahead.clear()
        self._pool.shutdown(wait=True, cancel_futures=True)
