"""The resource manager interface: start and kill trial processes, report their exits."""

from __future__ import annotations

import abc
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field

from pedl.exec import WorkerState

LogSink = Callable[[int, Sequence[tuple[str, str, int | None]]], None]
"""``sink(trial_id, [(stream, line, rank), ...])`` stores lines of a trial's output, in order;
``rank``: the worker of a multi-worker trial that wrote the line (None: a one-process trial's,
or the master's)."""

ExitHandler = Callable[[int, int], None]
"""``on_exit(trial_id, returncode)``: the trial's process ended (negative: killed by signal).
Called once per started process, from a resource-manager thread, after all of its output
went to the log sink."""


@dataclass(frozen=True)
class TrialLaunch:
    """Everything needed to start one trial process (an immutable snapshot)."""

    trial_id: int
    master_url: str
    token: str
    slots: int
    env: Mapping[str, str] = field(default_factory=dict)
    """Extra environment variables (the experiment's ``environment_variables``)."""
    experiment_id: int | None = None
    """The trial's experiment: trials of one experiment may run one after another in the same
    warm process (None: never)."""
    checkpoint_dir: str | None = None
    """The directory on this machine where the trial stores its checkpoints (``shared_fs`` or
    ``directory`` storage), if any: where trials run as their own user, the resource manager
    makes it theirs to write in (see :mod:`pedl.master.rm._trial_user`)."""
    resource_pool: str | None = None
    """The experiment's ``resources.resource_pool``, for resource managers that have pools
    (``ray``: a custom resource of that name); None or ``""``: none."""


@dataclass(frozen=True)
class WorkerExit:
    """A process a resource manager keeps ready for trials (a warm or spare worker) that
    exited by itself while it ran none."""

    number: int
    """1, 2, ...: the order in which the resource manager noticed the exits."""
    pid: int
    returncode: int
    """Its exit status (negative: the signal that ended it)."""
    spare: bool
    """It had run no trial yet."""
    experiment_id: int | None
    """The experiment whose trials it ran, if it ran any."""
    trial_id: int | None
    """The trial it ran last, if any."""
    at: float
    """When it was noticed (``time.time()``)."""


@dataclass(frozen=True)
class IdleWorker:
    """A process a resource manager keeps ready for trials (a warm or spare worker), idle
    now: it holds a slot until a trial takes it or it is retired."""

    pid: int
    spare: bool
    """It has run no trial yet: the first experiment without environment variables takes it."""
    experiment_id: int | None
    """The experiment whose trials it runs (None for a spare)."""
    trial_id: int | None
    """The trial it ran last, if any."""
    since: float
    """Since when it is idle (``time.time()``)."""


class ResourceManager(abc.ABC):
    """Runs trial processes on slots.

    Contract: :meth:`start` and :meth:`kill` are called from one thread (the orchestrator's,
    which must live as long as the master: children may be tied to it). The exit handler
    given to the constructor is called exactly once per started process. A resource
    manager never touches the database or experiment state; it gets narrow inputs.
    """

    @property
    @abc.abstractmethod
    def total_slots(self) -> int:
        """The number of slots this resource manager offers."""

    @property
    @abc.abstractmethod
    def uses_gpus(self) -> bool:
        """Whether slots are GPUs (else CPU slots)."""

    def prepare(self, master_url: str) -> None:  # noqa: B027 (optional: most do nothing)
        """Called once the master serves at ``master_url``, before any trial starts: a chance
        to start processes ahead of need. Does nothing by default."""

    @abc.abstractmethod
    def start(self, launch: TrialLaunch) -> None:
        """Start the trial's process; raises if it cannot (the caller errors the trial)."""

    @abc.abstractmethod
    def kill(self, trial_id: int) -> None:
        """Kill the trial's process now (no checkpoint); a no-op if it is not running."""

    @abc.abstractmethod
    def running(self) -> set[int]:
        """The trials whose processes have not been reported as exited."""

    @abc.abstractmethod
    def shutdown(self) -> None:
        """Kill every process and wait for the exit reports."""

    def set_disabled_slots(self, slots: frozenset[int]) -> None:  # noqa: B027 (optional)
        """The slots (``0`` to ``total_slots - 1``) that take no new trial (``det slot
        disable``, or all of them: ``det agent disable``); called from the orchestrator's
        thread when they change. The orchestrator starts no more trials than the other slots
        hold; a resource manager that places trials on particular slots (GPUs) keeps new
        trials, and the processes it keeps ready for them, off these. Trials running there go
        on. Does nothing by default."""

    def slot_ids(self, trial_id: int) -> list[int] | None:
        """The slots the trial's running process holds, where the resource manager places
        trials on particular slots (a GPU's index among its GPUs); None otherwise (the
        orchestrator then numbers them). None by default."""
        return None

    def workers(self, trial_id: int) -> list[WorkerState]:
        """The worker processes of the trial's running (else latest multi-worker) attempt, by
        rank; none by default."""
        return []

    def exit_cause(self, trial_id: int) -> str | None:
        """Why the trial's latest attempt ended where the resource manager knows more than its
        exit status (e.g. its node was lost), once (then forgotten); None by default."""
        return None

    def unavailable(self) -> str | None:
        """Why no trial can start now (e.g. the cluster cannot be reached), or None: while it
        says so, trials wait QUEUED with that reason and none is found never to fit. None by
        default."""
        return None

    def not_ready_for(
        self, experiment_id: int | None, slots: int, env: Mapping[str, str]
    ) -> str | None:
        """Why a trial of ``experiment_id`` on ``slots`` slots with environment variables
        ``env`` should not start yet (what it would start from is not ready, e.g. a process
        still importing the framework), or None: the orchestrator then leaves it queued with
        that reason and asks again at its next tick, so that :meth:`start` never holds the
        orchestrator up. It must not wait. None by default."""
        return None

    def launch_problem(
        self, env: Mapping[str, str], checkpoint_dir: str | None
    ) -> tuple[str | None, str] | None:
        """Why no trial of an experiment with environment variables ``env`` (its
        ``environment_variables``) and checkpoints in ``checkpoint_dir`` could ever start
        here, as (the config's field to change, None where only the master's settings can;
        the reason), or None: the master then
        refuses the experiment instead of accepting it and failing each trial. None by
        default."""
        return None

    def worker_exits(self) -> list[WorkerExit]:
        """The latest unexpected exits of processes kept ready for trials, oldest first (a
        bounded number). None by default."""
        return []

    def idle_workers(self) -> list[IdleWorker]:
        """The processes kept ready for trials that are idle now, longest idle first. None by
        default."""
        return []
