"""A process that a trial's script starts joins the trial's core context over a link.

A Core API script may start worker processes of its own (Determined 0.38's pattern: a launcher
that runs ``python3 -m determined.launch.wrap_rank RANK -- python3 train.py worker ...`` once
per slot). Those processes run no PEDL harness and hold no trial token; the trial's process
serves its core context to them (:mod:`pedl.script._core_link`) over a Unix socket in a private
directory (mode 0700) with a random key, named by :data:`LINK_ENV` and :data:`KEY_ENV` in the
environment the script's processes inherit. In such a process :func:`linked_context` is the
trial's context: its info, reports, checkpoints (stored and registered by the trial's
process, which uploads the directory the worker wrote), searcher and preemption answers are
the trial process's, each call one request and one answer. Its distributed context is the one
the script passes to ``core.init(distributed=...)``, else one with the trial process's ranks.
"""

from __future__ import annotations

import contextlib
import os
import threading
from collections.abc import Callable, Iterator, Mapping
from pathlib import Path
from typing import Any

from pedl.core._backend_link import LinkBackend
from pedl.core._checkpoint import CheckpointContext
from pedl.core._context import Context, TrialInfo
from pedl.core._distributed import DistributedContext
from pedl.core._link_transport import LinkClient
from pedl.core._preempt import PreemptContext
from pedl.core._searcher import SearcherContext
from pedl.core._train import TrainContext

LINK_ENV = "PEDL_CORE_LINK"
"""The variable naming the link's socket."""
KEY_ENV = "PEDL_CORE_LINK_KEY"
"""The variable holding the link's authkey (hex)."""


def connect(environ: Mapping[str, str]) -> LinkClient | None:
    """Connect to the trial process's link ``environ`` names, or None when it names none."""
    return LinkClient.connect(
        environ, address_env=LINK_ENV, key_env=KEY_ENV, peer="the trial's process"
    )


class _Forwarding:
    """Names the trial process's part has and this class does not (Determined 0.38's extras:
    ``report_progress``, ``upload``, ...) are called there."""

    _link: LinkClient
    _part: str

    def __getattr__(self, name: str) -> Callable[..., Any]:
        if name.startswith("_"):
            raise AttributeError(name)

        def forward(*args: Any, **kwargs: Any) -> Any:
            return self._link.call(self._part, name, args, kwargs)

        return forward


class _Train(_Forwarding, TrainContext):
    """Reports go to the trial process's Core API context as they are (0.38 allows metrics
    that are not numbers; that context records the numbers), the chief's only."""

    _part = "train"

    def __init__(self, link: LinkClient, *, is_chief: bool) -> None:  # no writer of its own
        self._link = link
        self._is_chief = is_chief

    def report_training_metrics(
        self, steps_completed: int, metrics: Mapping[str, Any], batch_metrics: Any = None
    ) -> None:
        if self._is_chief:
            self._link.call(
                "train", "report_training_metrics", (steps_completed, dict(metrics)), {}
            )

    def report_validation_metrics(self, steps_completed: int, metrics: Mapping[str, Any]) -> None:
        if self._is_chief:
            self._link.call(
                "train", "report_validation_metrics", (steps_completed, dict(metrics)), {}
            )


class _Checkpoint(_Forwarding, CheckpointContext):
    _part = "checkpoint"

    def __init__(self, link: LinkClient, *, is_chief: bool) -> None:  # no storage of its own
        self._link = link
        self._is_chief = is_chief

    @contextlib.contextmanager
    def _entered(self, name: str, *args: Any) -> Iterator[Any]:
        handle, value = self._link.call("enter", name, args)
        try:
            yield value
        except BaseException:
            self._link.call("exit", handle, True)
            raise
        self._link.call("exit", handle, False)

    @contextlib.contextmanager
    def store_path(
        self, metadata: Mapping[str, Any], shard: bool = False
    ) -> Iterator[tuple[Path, str]]:
        """A directory of the trial's process to write the checkpoint in; it is stored and
        registered there when the block ends (the chief only, as in PEDL's context)."""
        if not self._is_chief:
            raise RuntimeError(
                "only the chief (rank 0) stores checkpoints: call store_path on the chief, "
                "after gathering there the state of the other workers that it needs"
            )
        with self._entered("store_path", dict(metadata)) as (path, storage_id):
            yield Path(path), storage_id

    @contextlib.contextmanager
    def restore_path(self, storage_id: str, **_options: Any) -> Iterator[Path]:
        with self._entered("restore_path", storage_id) as path:
            yield Path(path)


class _Preempt(PreemptContext):
    def should_preempt(self, auto_ack: bool = True) -> bool:
        return super().should_preempt()

    def acknowledge_preemption_signal(self) -> None:
        """Accepted (PEDL needs no acknowledgement)."""


_lock = threading.Lock()
_joined: tuple[LinkClient, TrialInfo, dict[str, Any]] | None = None


def linked_context(
    distributed: DistributedContext | None = None, environ: Mapping[str, str] | None = None
) -> Context | None:
    """The trial's context in a process its script started (see the module docstring), with
    ``distributed`` as its distributed context (else the trial process's ranks); None where
    the environment names no link. Connects once per process."""
    global _joined
    with _lock:
        if _joined is None:
            link = connect(os.environ if environ is None else environ)
            if link is None:
                return None
            info, ranks = link.call("info")
            _joined = (link, info, ranks)
        link, info, ranks = _joined
    dist = distributed if distributed is not None else DistributedContext(**ranks)
    backend = LinkBackend(link)  # its searcher and preemption calls (reports go by the parts)
    return Context(
        info=info,
        distributed=dist,
        train=_Train(link, is_chief=dist.is_chief),
        checkpoint=_Checkpoint(link, is_chief=dist.is_chief),
        searcher=SearcherContext(backend, info.config.searcher_unit, dist),
        preempt=_Preempt(backend.should_preempt, dist),
    )
