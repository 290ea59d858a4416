"""The trial process's end of the core link (see :mod:`pedl.core._link`): serves a Core API
script's context to the processes the script starts.

:class:`CoreLink` is a :class:`pedl.core._link_transport.LinkServer` (a Unix socket in a private
directory, a random key, a thread per linked process, their calls run one at a time) over the
script's :class:`~pedl.script._core_api.CoreApiRun`: reports go through its searcher bookkeeping,
``should_preempt`` is answered as the chief's (the linked chief broadcasts it to its workers), a
checkpoint's directory is one of this process's storage (the linked process writes its files there;
they are stored and registered when its block ends). Only the calls named here are served.
"""

from __future__ import annotations

import contextlib
import itertools
import logging
from collections.abc import Callable
from typing import TYPE_CHECKING, Any

from pedl import core
from pedl.core._link import KEY_ENV, LINK_ENV
from pedl.core._link_transport import LinkServer

if TYPE_CHECKING:
    from pedl.script._core_api import CoreApiRun

logger = logging.getLogger("pedl.script")

_TRAIN_CALLS = frozenset(
    {
        "report_training_metrics",
        "report_validation_metrics",
        "report_progress",
        "report_early_exit",
        "set_status",
        "report_metrics",
        "get_tensorboard_path",
        "upload_tensorboard_files",
        "get_experiment_best_validation",
    }
)
_CHECKPOINT_CALLS = frozenset({"upload", "download", "delete"})
_ENTERED = frozenset({"store_path", "restore_path"})


class CoreLink:
    """Serves ``run``'s context to linked processes until :meth:`close`."""

    def __init__(self, run: CoreApiRun) -> None:
        self._run = run
        self._handles = itertools.count(1)
        self._open: dict[int, contextlib.ExitStack] = {}
        self._server = LinkServer(
            {
                "info": self._info,
                "train": lambda name, args, kwargs: self._part("train", _TRAIN_CALLS, name)(
                    *args, **kwargs
                ),
                "checkpoint": lambda name, args, kwargs: self._part(
                    "checkpoint", _CHECKPOINT_CALLS, name
                )(*args, **kwargs),
                "enter": self._enter,
                "exit": self._exit,
                "should_preempt": run.decide_preempt,
                "next_length": run.linked_next_length,
                "complete": run.linked_complete,
            },
            address_env=LINK_ENV,
            key_env=KEY_ENV,
            name="pedl-core-link",
            logger=logger,
        )

    @property
    def env(self) -> dict[str, str]:
        """The variables a linked process needs."""
        return self._server.env

    def close(self) -> None:
        """Stop serving and remove the socket; blocks still open are ended as failed."""
        self._server.close()
        with self._server.lock:
            for stack in self._open.values():
                with contextlib.suppress(Exception):
                    stack.__exit__(RuntimeError, RuntimeError("the script ended"), None)
            self._open.clear()

    # handlers ---------------------------------------------------------------------------

    def _info(self) -> tuple[core.TrialInfo, dict[str, Any]]:
        context = self._run.context
        dist = context.distributed
        ranks = {
            "rank": dist.rank,
            "size": dist.size,
            "local_rank": dist.local_rank,
            "local_size": dist.local_size,
            "cross_rank": dist.cross_rank,
            "cross_size": dist.cross_size,
            "chief_ip": dist.chief_ip,
            "pub_port": dist.pub_port,
            "pull_port": dist.pull_port,
            "port_offset": dist.port_offset,
            "force_tcp": dist.force_tcp,
            "timeout": dist.timeout,
        }
        return context.info, ranks

    def _part(self, part: str, allowed: frozenset[str], name: str) -> Callable[..., Any]:
        if name not in allowed:
            raise AttributeError(f"{part}.{name} is not served to linked processes")
        method: Callable[..., Any] = getattr(getattr(self._run.context, part), name)
        return method

    def _enter(self, name: str, args: tuple[Any, ...]) -> tuple[int, Any]:
        if name not in _ENTERED:
            raise AttributeError(f"checkpoint.{name} is not served to linked processes")
        stack = contextlib.ExitStack()
        value = stack.enter_context(getattr(self._run.context.checkpoint, name)(*args))
        handle = next(self._handles)
        self._open[handle] = stack
        return handle, value

    def _exit(self, handle: int, failed: bool) -> None:
        stack = self._open.pop(handle)
        if failed:
            error = RuntimeError("the linked process's block raised")
            stack.__exit__(RuntimeError, error, None)
        else:
            stack.close()
