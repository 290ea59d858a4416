"""``pedl.core.init()``: the core context of the trial a script runs in.

A simple model definition (a script, or a ``module:function`` entrypoint) runs inside a
trial whose :class:`Context` PEDL built; :func:`use_context` makes that context the one
:func:`init` yields, for the script's run. Outside PEDL (``python3 train.py`` by hand)
:func:`init` yields a detached context whose reports go nowhere, so the same script runs.
"""

from __future__ import annotations

import contextlib
import threading
from collections.abc import Iterator
from typing import Any

from pedl.core._context import Context
from pedl.core._detached import detached_context
from pedl.core._distributed import DistributedContext
from pedl.core._link import linked_context

_lock = threading.Lock()
_active: Context | None = None

_OFF_CLUSTER_CONFIG = {
    "name": "off-cluster",
    "searcher": {"name": "single", "metric": "val_loss", "max_length": {"batches": 1}},
}


@contextlib.contextmanager
def use_context(context: Context) -> Iterator[Context]:
    """Make ``context`` the trial context of this process (what :func:`init` yields) for the
    block. Not reentrant: one trial runs in a process at a time."""
    global _active
    with _lock:
        if _active is not None:
            raise RuntimeError("a trial context is already active in this process")
        _active = context
    try:
        yield context
    finally:
        with _lock:
            _active = None


def active_context() -> Context | None:
    """The context of the trial this process runs (inside :func:`use_context`); in a process
    that a trial's script started, the trial's context over its link
    (:func:`pedl.core._link.linked_context`); else None."""
    if _active is not None:
        return _active
    return linked_context()


@contextlib.contextmanager
def init(*, distributed: DistributedContext | None = None, **_options: Any) -> Iterator[Context]:
    """Yield the core context of the running trial (Determined 0.38's ``core.init()``).

    ``distributed`` is accepted for Determined's signature; inside a trial PEDL's context
    already has the trial's :class:`DistributedContext`, and other options
    (``checkpoint_storage``, ``preempt_mode``, ...) come from the experiment config. In a
    process that a trial's script started (its own launcher's workers), the trial's context
    over its link, with ``distributed`` (the workers' collectives, ``should_preempt()`` and
    ``searcher.operations()`` in step over it; only its chief reports and checkpoints).
    Outside PEDL it yields a detached context: metrics are discarded, there are no searcher
    operations, and ``should_preempt()`` is False.
    """
    context = _active
    if context is None:
        context = linked_context(distributed)
    if context is None:
        context = detached_context(_OFF_CLUSTER_CONFIG, hparams={})
        if distributed is not None:
            context = Context(
                info=context.info,
                distributed=distributed,
                train=context.train,
                checkpoint=context.checkpoint,
                searcher=context.searcher,
                preempt=context.preempt,
            )
    yield context
