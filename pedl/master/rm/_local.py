"""The local resource manager: each trial is a child process of the master on this machine."""

from __future__ import annotations

import contextlib
import logging
import os
import queue
import shutil
import signal
import subprocess
import sys
import threading
import time
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import IO

from pedl._tf_noise import ANSI, is_tf_noise
from pedl.exec import (
    HEARTBEAT_TIMEOUT_SECONDS,
    TOKEN_FD_ENV,
    Gang,
    WorkerState,
    gang_environments,
    pick_ports,
    token_channel,
)
from pedl.master.rm._base import (
    ExitHandler,
    IdleWorker,
    LogSink,
    ResourceManager,
    TrialLaunch,
    WorkerExit,
)
from pedl.master.rm._isolation import (
    private_dir,
    private_variables,
    protect_master_process,
    remove_dir,
    remove_stale_dirs,
    trial_environment,
)
from pedl.master.rm._template import READY_TIMEOUT_S, ForkedProcess, WorkerTemplate
from pedl.master.rm._trial_user import TrialUser, popen_kwargs
from pedl.master.rm._warm import WarmPool, WarmWorker, WorkerProcess

logger = logging.getLogger("pedl.master")

TRIAL_MODULE = "pedl.exec.trial"
TRIAL_PYTHON_VARIABLE = "PEDL_TRIAL_PYTHON"
"""An experiment's environment variable naming the Python its trials run with (e.g. the
TensorFlow 2.15 environment of EstimatorTrials) instead of the master's."""
WORKER_IDLE_SECONDS = 30.0
"""How long an idle warm worker waits for another trial of its experiment before it is
retired."""
_FLUSH_SECONDS = 0.2
_FLUSH_LINES = 500
_LAST_WORKERS_KEPT = 256
_TEMPLATE_START_S = 30.0
"""How long a trial waits for the template's process to be started (a ``Popen``: milliseconds)."""
_EOF = None


def detect_gpus() -> list[str]:
    """The GPU ids of this machine (``/dev/nvidiaN``), restricted by ``CUDA_VISIBLE_DEVICES``
    when it is set. No GPU library is imported."""
    found = sorted((p.name[len("nvidia") :] for p in Path("/dev").glob("nvidia[0-9]*")), key=int)
    visible = os.environ.get("CUDA_VISIBLE_DEVICES")
    if visible is not None:
        wanted = [v.strip() for v in visible.split(",") if v.strip()]
        found = [g for g in found if g in wanted]
    return found


_Line = tuple[str, str, int | None]
"""``(stream, text, rank)``: a line of a trial's output (rank None: a one-process trial)."""


@dataclass
class _Process:
    """A running trial: its own process, a warm worker it was handed to, or the gang of
    worker processes of a multi-worker trial (``popen`` is then the chief's)."""

    trial_id: int
    popen: WorkerProcess
    gpus: list[str]
    worker: WarmWorker | None = None
    lines: queue.Queue[_Line | None] = field(default_factory=queue.Queue)
    gang: Gang | None = None
    tmpdirs: list[Path] = field(default_factory=list)
    """The private temporary directories of a gang's workers."""
    killed: bool = False
    tmpdir: Path | None = None
    """The trial's private temporary directory, removed once the process is reaped."""
    checkpoint_dir: Path | None = None
    """Where the trial stores its checkpoints (sealed once it ends, with a trial user)."""


class LocalResourceManager(ResourceManager):
    """Runs ``python -m pedl.exec.trial`` per trial, in its own process group.

    Slots are the machine's GPUs (each process sees its own through
    ``CUDA_VISIBLE_DEVICES``) or, without GPUs, ``cpu_slots`` CPU slots. The child's stdout
    and stderr go, line by line, to ``log_sink``; when the process has exited and its output
    is drained, ``on_exit(trial_id, returncode)`` is called; TensorFlow's start-up chatter
    (:func:`is_tf_noise`) is dropped unless the trial's ``TF_CPP_MIN_LOG_LEVEL`` is ``0``.

    What the trial gets of the master (see :mod:`pedl.master.rm._isolation`): the master's
    environment without the master's own variables (:func:`trial_environment`: no database
    URL, no password; HOME untouched unless trials run as their own user, see below) plus
    ``TF_CPP_MIN_LOG_LEVEL=2`` (unless the experiment's environment variables set it), the
    launch's variables, ``PEDL_MASTER_URL``, ``PEDL_TRIAL_ID``, ``PEDL_MASTER_PID`` (the
    child exits when its master dies: see :mod:`pedl.exec`) and ``TMPDIR``, a private
    directory (0700) of the trial's removed when its process has been reaped, however it
    ended. The trial's token is never in an environment or a command line: a trial process
    reads it from an inherited socket named by ``PEDL_TRIAL_TOKEN_FD``, a warm worker gets it
    in its control message. Each process runs in its own process group (session).
    Constructing the resource manager makes this process non-dumpable and hides its secrets
    from ``/proc`` (:func:`protect_master_process`), and removes the private directories that
    masters gone before (SIGKILLed) left behind.

    The child runs with ``python``, or with the interpreter that the launch's
    ``PEDL_TRIAL_PYTHON`` names (a path, or a command on PATH), which must have PEDL
    installed.

    With ``reuse_workers``, a trial of an experiment (``launch.experiment_id`` set) runs in a
    warm worker instead (``python -m pedl.exec.worker``, see :mod:`pedl.exec._worker`): one
    that finished a trial of the same experiment, started with the same environment on as
    many GPUs, and is ready for another (the trial's log says so); else a new one (the
    longest idle worker is retired first when the workers would outnumber the slots, or hold
    GPUs the trial needs). The trial's output goes to its own pipes, and the worker's exit
    report comes as the trial process's would. An idle worker is retired after
    ``worker_idle_seconds``. A worker's own output outside trials goes to the master's log.

    With ``spare_workers`` (and reuse, and no GPUs), up to that many spare workers are started
    once :meth:`prepare` gives the master's address, and again whenever slots are free for
    them (checked every few seconds): each has the environment a trial of an experiment
    without environment variables gets, has run no trial, and becomes the worker of the first
    such trial, which so starts without the framework's import. Spares are never retired for
    being idle, and give way (longest idle first) to any trial that needs a new process. A
    spare that exits by itself stops them: the master's log says why.

    With ``worker_template`` as well (and reuse, no GPUs, no trial user), the spares and every
    worker of their environment (an experiment's without environment variables) are forked from
    a template (:mod:`pedl.exec._template`): it imports the framework once, and a new worker
    then takes milliseconds instead of that import (a new experiment's first trials, a second
    slot, a worker that a failed trial left unfit). Its own thread (:meth:`_start_templates`)
    starts it with the spares or, without spares, for the first trial that needs a worker;
    without spares it is retired once no worker it forked has lived for
    ``worker_idle_seconds``, and started again when needed. Until it is ready, spares and
    trials that need a new worker wait for it (a trial at most :data:`READY_TIMEOUT_S`, as a
    trial once waited for a spare's import: queued, see :meth:`not_ready_for`); a
    template that exits by itself, fails a fork or does not get ready is not used again, nor
    started again (the master's log says why), and new workers are processes of their own.

    With a ``trial_user`` (:mod:`pedl.master.rm._trial_user`; the master passes one where it
    runs as root), trial processes and warm workers run as that user, without supplementary
    groups and with umask 077; each one's private directory is that user's and holds its
    ``HOME`` too. Before a trial starts, its ``checkpoint_dir`` is made ready for that user
    (the start fails, saying which setting to change, when the user cannot reach it), and the
    finished checkpoints there are sealed, again when the trial has ended.
    """

    def __init__(
        self,
        *,
        cpu_slots: int,
        on_exit: ExitHandler,
        log_sink: LogSink,
        gpus: Sequence[str] | None = None,
        python: str = sys.executable,
        reuse_workers: bool = False,
        worker_idle_seconds: float = WORKER_IDLE_SECONDS,
        spare_workers: int = 0,
        worker_template: bool = False,
        trial_user: TrialUser | None = None,
        heartbeat_timeout: float = HEARTBEAT_TIMEOUT_SECONDS,
    ) -> None:
        self._heartbeat_timeout = heartbeat_timeout
        self._causes: dict[int, str] = {}
        """Why a trial's multi-worker attempt ended early (a worker failed or hung), until
        :meth:`exit_cause` takes it."""
        self._last_workers: dict[int, list[WorkerState]] = {}
        """The workers of each trial's latest attempt of several workers, once it ended
        (bounded: the latest trials)."""
        self._gpus = list(detect_gpus() if gpus is None else gpus)
        self._total = len(self._gpus) if self._gpus else cpu_slots
        self._free_gpus = list(self._gpus)
        self._disabled: frozenset[int] = frozenset()
        """The disabled slots (:meth:`set_disabled_slots`): GPU indexes, or as many CPU slots."""
        self._on_exit = on_exit
        self._sink = log_sink
        self._python = python
        self._lock = threading.Lock()
        self._procs: dict[int, _Process] = {}
        self._watchers: list[threading.Thread] = []
        self._reuse = reuse_workers
        self._idle_seconds = worker_idle_seconds
        self._pool = WarmPool()
        self._spares_wanted = spare_workers if reuse_workers and not self._gpus else 0
        self._spare_env: dict[str, str] | None = None
        self._user = trial_user
        self._template_wanted = (
            worker_template and reuse_workers and not self._gpus and trial_user is None
        )
        self._template: WorkerTemplate | None = None
        self._template_needed = threading.Event()
        """Set to make the template's own thread (:meth:`_start_templates`) start one."""
        self._template_started = threading.Event()
        self._template_idle_since: float | None = None
        self._closed = threading.Event()
        self._housekeeping = threading.Event()
        """Set to make the housekeeping thread (:meth:`_housekeep`) run at once."""
        protect_master_process()
        remove_stale_dirs()
        if reuse_workers:
            threading.Thread(
                target=self._housekeep, name="pedl-rm-housekeeping", daemon=True
            ).start()
        if self._template_wanted:
            threading.Thread(
                target=self._start_templates, name="pedl-rm-template", daemon=True
            ).start()

    @property
    def total_slots(self) -> int:
        return self._total

    @property
    def uses_gpus(self) -> bool:
        return bool(self._gpus)

    @property
    def _capacity(self) -> int:
        """The slots that are not disabled: the most processes (trials' and idle workers')
        that new ones may join."""
        return self._total - len(self._disabled)

    def _disabled_gpus(self) -> set[str]:
        return {self._gpus[i] for i in self._disabled if i < len(self._gpus)}

    def set_disabled_slots(self, slots: frozenset[int]) -> None:
        """Keep new trials and warm workers off ``slots`` (GPU indexes; without GPUs, as
        many CPU slots): idle workers that hold a disabled GPU, or that would make the
        processes outnumber the enabled slots, are retired now; a worker whose trial ends on
        a disabled GPU is retired instead of kept."""
        with self._lock:
            self._disabled = frozenset(s for s in slots if 0 <= s < self._total)
            disabled_gpus = self._disabled_gpus()
            for worker in self._pool.take_all():
                if set(worker.gpus) & disabled_gpus:
                    self._retire(worker)
                else:
                    self._pool.put(worker)
            while len(self._pool) and len(self._procs) + len(self._pool) > self._capacity:
                oldest = self._pool.oldest()
                if oldest is None:
                    break
                self._retire(oldest)

    def slot_ids(self, trial_id: int) -> list[int] | None:
        """With GPUs: the indexes of the trial's GPUs; None without (CPU slots are alike)."""
        if not self._gpus:
            return None
        with self._lock:
            proc = self._procs.get(trial_id)
            return None if proc is None else sorted(self._gpus.index(g) for g in proc.gpus)

    def start(self, launch: TrialLaunch) -> None:
        self._await_template(launch)
        with self._lock:
            if launch.trial_id in self._procs:
                raise RuntimeError(f"trial {launch.trial_id} is already running")
            self._causes.pop(launch.trial_id, None)  # an earlier attempt's, never taken
            checkpoint_dir = self._prepare_storage(launch)
            env = self._environment(launch.env, launch.master_url)
            variables = {"PEDL_TRIAL_ID": str(launch.trial_id)}
            # TF_CPP_MIN_LOG_LEVEL=0 in the experiment's environment asks for every C++ line
            drop_tf_noise = env["TF_CPP_MIN_LOG_LEVEL"] != "0"
            if launch.slots > 1:
                proc = self._start_gang(launch, env, variables, drop_tf_noise)
                streams, note = None, self._gang_note(proc)
            elif self._reuse and launch.experiment_id is not None:
                proc, streams, note = self._start_in_worker(
                    launch, launch.experiment_id, env, variables, drop_tf_noise
                )
            else:
                proc, streams, note = self._start_process(launch, env, variables), None, ""
            proc.checkpoint_dir = checkpoint_dir
            self._procs[launch.trial_id] = proc
        if note:
            self._ship(launch.trial_id, [("master", f"[master] {note}", None)])
        if proc.gang is None:  # a gang's own threads read its output
            if streams is None:
                assert proc.popen.stdout is not None and proc.popen.stderr is not None
                streams = (proc.popen.stdout, proc.popen.stderr)
            for stream, name in zip(streams, ("stdout", "stderr"), strict=True):
                threading.Thread(
                    target=_read_lines,
                    args=(stream, name, proc.lines, drop_tf_noise),
                    name=f"pedl-trial-{launch.trial_id}-{name}",
                    daemon=True,
                ).start()
        watcher = threading.Thread(
            target=self._watch,
            args=(proc,),
            name=f"pedl-trial-{launch.trial_id}-watch",
            daemon=True,
        )
        watcher.start()
        self._watchers = [w for w in self._watchers if w.is_alive()] + [watcher]

    @staticmethod
    def _environment(launch_env: Mapping[str, str], master_url: str) -> dict[str, str]:
        """A trial's environment without its own variables (those of its experiment's trials
        alike)."""
        return {
            **trial_environment(os.environ),
            "TF_CPP_MIN_LOG_LEVEL": "2",
            "PYTHONUNBUFFERED": "1",
            **launch_env,
            "PEDL_MASTER_URL": master_url,
            "PEDL_MASTER_PID": str(os.getpid()),
        }

    def _prepare_storage(self, launch: TrialLaunch) -> Path | None:
        """With a trial user, make the launch's checkpoint directory ready for it (raises
        ``PermissionError`` when it cannot reach it); the directory, else ``None``."""
        if self._user is None or launch.checkpoint_dir is None:
            return None
        directory = Path(launch.checkpoint_dir)
        self._user.prepare_storage(directory)
        return directory

    def prepare(self, master_url: str) -> None:
        """Start the spare workers (see the class), soon, from the resource manager's own
        thread (a worker dies with the thread that started it)."""
        with self._lock:
            self._spare_env = self._environment({}, master_url)
        if self._spares_wanted:
            self._template_needed.set()
        self._housekeeping.set()

    def _top_up_spares(self) -> None:
        """Start spare workers while fewer than wanted are idle and slots are free for them
        (from the housekeeping thread, which holds the lock)."""
        env = self._spare_env
        while (
            env is not None
            and not self._closed.is_set()
            and self._pool.spares() < self._spares_wanted
            and len(self._procs) + len(self._pool) < self._capacity
        ):
            template = self._usable_template()
            if self._template_wanted and (template is None or not template.ready()):
                self._template_needed.set()
                return  # it forks them once it has imported the framework
            try:
                worker = self._new_worker(self._python, env, [], experiment_id=None)
            except OSError as err:
                logger.warning("no spare warm workers: starting one failed: %s", err)
                self._spares_wanted = 0
                return
            self._forward_worker_output(worker, drop_tf_noise=True)
            self._pool.put(worker)

    def _start_templates(self) -> None:
        """Start the warm worker template whenever one is needed and there is none (a thread
        that lives as long as the resource manager, since the template dies with the thread
        that started it, and that takes none of its locks, since a trial's start waits for it
        with the lock held)."""
        while True:
            self._template_needed.wait()
            self._template_needed.clear()
            if self._closed.is_set():
                return  # a template started here dies now (PR_SET_PDEATHSIG)
            env = self._spare_env
            if env is not None and self._template is None and self._template_wanted:
                try:
                    template = WorkerTemplate.spawn(self._python, env)
                except OSError as err:
                    logger.warning("no warm worker template: starting it failed: %s", err)
                    self._template_wanted = False
                else:
                    self._forward_output(template.popen, f"warm worker template {template.pid}")
                    self._template = template
                    logger.info("started the warm worker template %d", template.pid)
            self._template_started.set()

    def _template_would_fork(
        self, experiment_id: int | None, slots: int, env: Mapping[str, str]
    ) -> bool:
        """Whether a new worker for such a trial would be forked from the template (its
        experiment has no environment variables of its own)."""
        spare_env = self._spare_env
        return (
            self._template_wanted
            and self._reuse
            and slots == 1
            and experiment_id is not None
            and not env.get(TRIAL_PYTHON_VARIABLE)
            and spare_env is not None
            and self._environment(env, spare_env["PEDL_MASTER_URL"]) == spare_env
        )

    def not_ready_for(
        self, experiment_id: int | None, slots: int, env: Mapping[str, str]
    ) -> str | None:
        """While the template that would fork the trial's worker is starting or importing the
        framework: that reason (and the template is started where there is none). A template
        not ready within :data:`READY_TIMEOUT_S` is used no more, and the trial gets a process
        of its own."""
        if not self._template_would_fork(experiment_id, slots, env):
            return None
        with self._lock:
            template = self._usable_template()
            if template is None:
                if not self._template_wanted:
                    return None
                self._template_needed.set()
            elif template.ready() or self._usable_template() is None:
                return None
            return "waiting for the warm worker template to import the framework"

    def _await_template(self, launch: TrialLaunch) -> None:
        """Before a trial whose new worker the template would fork takes the lock: start the
        template if there is none and wait until it is ready (at most :data:`READY_TIMEOUT_S`),
        so that no other call into the resource manager (``/cluster``, a trial's workers) waits
        for the framework's import with it. (The orchestrator asks :meth:`not_ready_for` first
        and so does not wait here.)"""
        if not self._template_would_fork(launch.experiment_id, launch.slots, launch.env):
            return
        with self._lock:
            template = self._usable_template()
            if template is None and self._template_wanted:
                self._template_started.clear()
                self._template_needed.set()
        if template is None:
            self._template_started.wait(_TEMPLATE_START_S)
            template = self._template
        if template is not None:
            template.ready(READY_TIMEOUT_S)

    def _retire_idle_template(self) -> None:
        """Without spares, retire the template once it is ready and no worker it forked has
        lived for ``worker_idle_seconds`` (a later trial starts another); the caller holds the
        lock."""
        template = self._template
        if template is None or self._spares_wanted or not self._template_wanted:
            return
        workers = [p.worker for p in self._procs.values() if p.worker is not None]
        if not template.ready() or any(  # a template not ready yet has a trial waiting for it
            isinstance(w.popen, ForkedProcess) and w.popen.poll() is None
            for w in workers + self._pool.workers()
        ):
            self._template_idle_since = None
        elif self._template_idle_since is None:
            self._template_idle_since = time.monotonic()
        elif time.monotonic() - self._template_idle_since > self._idle_seconds:
            logger.info(
                "retired the warm worker template %d: no worker of it is left", template.pid
            )
            template.retire()
            self._template = None
            self._template_idle_since = None

    def _usable_template(self) -> WorkerTemplate | None:
        """The template, unless there is none, or it failed: then it is used no more, and the
        master's log says why (the caller holds the lock). Its workers go on; one that never
        got ready (it has none) is killed."""
        template = self._template
        if template is None or not self._template_wanted:
            return None
        failure = template.failure
        if failure is not None:
            self._template_wanted = False
            logger.warning(
                "the warm worker template %d failed: %s; new warm workers are processes of "
                "their own from now on (its output is above)",
                template.pid,
                failure,
            )
            if not template.ever_ready:
                template.retire()
                self._template = None
            return None
        return template

    def _new_worker(
        self, python: str, env: dict[str, str], gpus: list[str], *, experiment_id: int | None
    ) -> WarmWorker:
        """A new warm worker: forked from the template where it serves (waiting for one that
        is still importing the framework, as a trial waits for a spare that is), else a process
        of its own (the caller holds the lock). Raises ``OSError`` if it cannot be started."""
        if (
            self._template is None
            and self._template_wanted
            and (python, env, gpus) == (self._python, self._spare_env, [])
        ):  # the first worker of a master without spares, or after the template retired
            self._template_started.clear()
            self._template_needed.set()
            self._template_started.wait(_TEMPLATE_START_S)
        template = self._usable_template()
        if (
            template is not None
            and template.serves(python, env, len(gpus))
            and template.ready(READY_TIMEOUT_S)
        ):
            try:
                return WarmWorker.fork(template, env, experiment_id=experiment_id)
            except OSError as err:
                logger.warning("%s", err)
                self._usable_template()  # failed now: says so
        return WarmWorker.spawn(
            python, env, gpus=gpus, experiment_id=experiment_id, user=self._user
        )

    def _start_gang(
        self,
        launch: TrialLaunch,
        env: dict[str, str],
        variables: dict[str, str],
        drop_tf_noise: bool,
    ) -> _Process:
        """Start the ``launch.slots`` worker processes of a multi-worker trial together
        (:class:`~pedl.exec._gang.Gang`; never in warm workers): each one GPU of the
        trial's, or a CPU slot, and its own private temporary directory (the caller holds
        the lock)."""
        size = launch.slots
        gpu_count = size if self._gpus else 0
        self._make_room(gpu_count)
        if not self._gpus:
            # Idle warm workers hold CPU slots too: retire them while the gang would not fit.
            while len(self._pool) and len(self._procs) + len(self._pool) + size > self._capacity:
                oldest = self._pool.oldest()
                if oldest is None:
                    break
                self._retire(oldest)
        gpus = self._take_gpus(launch.trial_id, gpu_count)
        lines: queue.Queue[_Line | None] = queue.Queue()

        def on_output(rank: int, stream: str, raw: bytes | None) -> None:
            if raw is None:
                lines.put(_EOF)
                return
            text = ANSI.sub("", raw.decode("utf-8", errors="replace").rstrip("\r\n"))
            if not (drop_tf_noise and is_tf_noise(text)):
                lines.put((stream, text, rank))

        def on_event(line: str) -> None:
            logger.warning("trial %d: %s", launch.trial_id, line)
            lines.put(("master", f"[master] {line}", None))

        gang = Gang(
            heartbeat_timeout=self._heartbeat_timeout, on_output=on_output, on_event=on_event
        )
        envs = gang_environments(size, pick_ports(size), gpus=[[g] for g in gpus] if gpus else None)
        tmpdirs: list[Path] = []
        channels = []
        try:
            python = self._python_for(launch)
            for rank_env in envs:
                tmpdir = private_dir(launch.trial_id, user=self._user)
                tmpdirs.append(tmpdir)
                channel = token_channel(launch.token)
                channels.append(channel)
                rank_env.update(
                    {
                        **env,
                        **rank_env,
                        **variables,
                        **private_variables(tmpdir, self._user),
                        TOKEN_FD_ENV: str(channel.fileno()),
                    }
                )
            gang.start(
                [python, "-m", TRIAL_MODULE],
                envs,
                pass_fds=[(c.fileno(),) for c in channels],
                **popen_kwargs(self._user),
            )
        except OSError:
            self._free_gpus.extend(gpus)
            for tmpdir in tmpdirs:
                remove_dir(tmpdir)
            raise
        finally:
            for channel in channels:
                channel.close()
        chief = gang.popen(0)
        return _Process(launch.trial_id, chief, gpus, lines=lines, gang=gang, tmpdirs=tmpdirs)

    @staticmethod
    def _gang_note(proc: _Process) -> str:
        assert proc.gang is not None
        pids = ", ".join(f"rank {rank}: {pid}" for rank, pid in enumerate(proc.gang.pids))
        return (
            f"the trial runs as {proc.gang.size} worker processes (pids {pids}; rank 0 is the "
            "chief)"
        )

    def _start_process(
        self, launch: TrialLaunch, env: dict[str, str], variables: dict[str, str]
    ) -> _Process:
        """Start ``python -m pedl.exec.trial`` for the trial (the caller holds the lock)."""
        gpu_count = launch.slots if self._gpus else 0
        self._make_room(gpu_count)
        gpus = self._take_gpus(launch.trial_id, gpu_count)
        if gpus:
            env["CUDA_VISIBLE_DEVICES"] = ",".join(gpus)
        tmpdir: Path | None = None
        try:
            tmpdir = private_dir(launch.trial_id, user=self._user)
            with token_channel(launch.token) as token:
                popen = subprocess.Popen(
                    [self._python_for(launch), "-m", TRIAL_MODULE],
                    stdin=subprocess.DEVNULL,
                    stdout=subprocess.PIPE,
                    stderr=subprocess.PIPE,
                    env={
                        **env,
                        **variables,
                        **private_variables(tmpdir, self._user),
                        TOKEN_FD_ENV: str(token.fileno()),
                    },
                    start_new_session=True,
                    pass_fds=(token.fileno(),),
                    **popen_kwargs(self._user),
                )
        except OSError:
            self._free_gpus.extend(gpus)
            remove_dir(tmpdir)
            raise
        return _Process(launch.trial_id, popen, gpus, tmpdir=tmpdir)

    def _start_in_worker(
        self,
        launch: TrialLaunch,
        experiment_id: int,
        env: dict[str, str],
        variables: dict[str, str],
        drop_tf_noise: bool,
    ) -> tuple[_Process, tuple[IO[bytes], IO[bytes]], str]:
        """Hand the trial to an idle warm worker that serves it, else to a new one; return
        it, the trial's output streams, and a line for the trial's log (the caller holds the
        lock)."""
        gpu_count = launch.slots if self._gpus else 0
        while (worker := self._pool.take(experiment_id, env, gpu_count)) is not None:
            earlier = worker.trials
            try:
                streams, tmpdir = self._assign(worker, launch, variables)
            except OSError:  # it died while idle
                self._retire(worker)
                continue
            note = (
                f"the trial runs in the warm worker process {worker.pid}, which ran {earlier} "
                "earlier trial(s) of this experiment"
                if earlier
                else f"the trial runs in the spare warm worker process {worker.pid}, started "
                "before it was needed"
            )
            proc = _Process(launch.trial_id, worker.popen, worker.gpus, worker, tmpdir=tmpdir)
            return proc, streams, note
        self._make_room(gpu_count)
        gpus = self._take_gpus(launch.trial_id, gpu_count)
        try:
            worker = self._new_worker(
                self._python_for(launch), env, gpus, experiment_id=experiment_id
            )
        except OSError:
            self._free_gpus.extend(gpus)
            raise
        self._forward_worker_output(worker, drop_tf_noise)
        try:
            streams, tmpdir = self._assign(worker, launch, variables)
        except OSError:
            self._retire(worker)
            raise
        note = f"the trial runs in a new warm worker process {worker.pid}" + (
            ", forked from the warm worker template (no framework import)"
            if isinstance(worker.popen, ForkedProcess)
            else ""
        )
        proc = _Process(launch.trial_id, worker.popen, gpus, worker, tmpdir=tmpdir)
        return proc, streams, note

    def _assign(
        self, worker: WarmWorker, launch: TrialLaunch, variables: dict[str, str]
    ) -> tuple[tuple[IO[bytes], IO[bytes]], Path]:
        """Hand the trial to ``worker`` with a private temporary directory (under the
        worker's): its output streams and that directory. Raises ``OSError`` (the directory
        removed) if the worker is gone."""
        tmpdir = private_dir(launch.trial_id, base=worker.tmpdir, user=self._user)
        try:
            streams = worker.assign(
                launch.trial_id,
                launch.token,
                {**variables, **private_variables(tmpdir, self._user)},
            )
        except OSError:
            remove_dir(tmpdir)
            raise
        return streams, tmpdir

    def launch_problem(
        self, env: Mapping[str, str], checkpoint_dir: str | None
    ) -> tuple[str | None, str] | None:
        """Why no trial with the experiment's environment variables ``env`` and checkpoints
        in ``checkpoint_dir`` could start here, as (the config's field to change, None for
        the master's settings; the reason), or ``None``: ``PEDL_TRIAL_PYTHON`` names no
        Python; with a trial user, it cannot run the trials' Python (``PEDL_TRIAL_PYTHON``,
        else the master's), reach the checkpoint directory or the master's temporary
        directory. Each reason names the ways out (see :mod:`pedl.master.rm._trial_user`)."""
        where = "environment.environment_variables"
        try:
            self._python_for_env(env)
        except (FileNotFoundError, PermissionError) as err:
            return where, str(err)
        if self._user is None:
            return None
        if checkpoint_dir is not None:
            unreachable = self._user.storage_unreachable(Path(checkpoint_dir))
            if unreachable is not None:
                return "checkpoint_storage", unreachable
        unreachable = self._user.temporary_unreachable()
        return None if unreachable is None else (None, unreachable)

    def _python_for(self, launch: TrialLaunch) -> str:
        """The interpreter of the trial's process: ``PEDL_TRIAL_PYTHON`` if the experiment sets
        it, else the resource manager's. (A warm worker serves only trials of its environment,
        hence of its interpreter.) With a trial user, one it cannot run is refused, saying
        so."""
        return self._python_for_env(launch.env)

    def _python_for_env(self, env: Mapping[str, str]) -> str:
        python = env.get(TRIAL_PYTHON_VARIABLE)
        if not python:
            python = self._python
        elif shutil.which(python) is None:
            raise FileNotFoundError(
                f"{TRIAL_PYTHON_VARIABLE}={python} (in the experiment's "
                "environment.environment_variables) names no executable Python on the master's "
                "machine"
            )
        if self._user is not None:
            self._user.check_runnable(python)
        return python

    def _usable_gpus(self) -> list[str]:
        """The free GPUs that are not disabled (the caller holds the lock)."""
        disabled = self._disabled_gpus()
        return [g for g in self._free_gpus if g not in disabled]

    def _take_gpus(self, trial_id: int, count: int) -> list[str]:
        """Take ``count`` free GPUs that are not disabled (the caller holds the lock)."""
        usable = self._usable_gpus()
        if count > len(usable):
            raise RuntimeError(
                f"trial {trial_id} needs {count} GPUs, {len(usable)} are free and enabled"
            )
        gpus = usable[:count]
        self._free_gpus = [g for g in self._free_gpus if g not in gpus]
        return gpus

    def _make_room(self, gpu_count: int) -> None:
        """Retire idle workers, longest idle first, while a new process would make the
        processes outnumber the slots or the trial needs GPUs they hold (the caller holds
        the lock)."""
        while len(self._pool) and (
            len(self._procs) + len(self._pool) >= self._capacity
            or gpu_count > len(self._usable_gpus())
        ):
            worker = self._pool.oldest()
            if worker is None:
                break
            self._retire(worker)

    def _retire(self, worker: WarmWorker) -> None:
        """Kill an idle worker, wait for it to be gone, free its GPUs (the caller holds the
        lock)."""
        worker.retire()
        self._free_gpus.extend(worker.gpus)
        self._free_gpus.sort(key=lambda g: self._gpus.index(g))

    def _housekeep(self) -> None:
        """Retire workers idle for longer than ``worker_idle_seconds``, and top up the spares
        (a thread)."""
        period = max(0.1, min(5.0, self._idle_seconds / 2))
        wait = period
        while True:
            self._housekeeping.wait(wait)
            self._housekeeping.clear()
            if self._closed.is_set():
                return
            with self._lock:
                for worker in self._pool.idle_longer_than(self._idle_seconds):
                    if worker.spare and self._spares_wanted:
                        logger.warning(
                            "the spare warm worker %d exited by itself (exit status %s); no "
                            "more spares are started (its output is above)",
                            worker.pid,
                            worker.popen.poll(),
                        )
                        self._spares_wanted = 0
                    self._retire(worker)
                self._top_up_spares()
                self._retire_idle_template()
                template = self._usable_template()
                # while the template imports, look again soon: the spares wait for it
                wait = 0.1 if template is not None and not template.ready() else period

    def _forward_worker_output(self, worker: WarmWorker, drop_tf_noise: bool) -> None:
        """Send a worker's own output (outside its trials) to the master's log."""
        self._forward_output(worker.popen, f"warm worker {worker.pid}", drop_tf_noise)

    @staticmethod
    def _forward_output(process: WorkerProcess, who: str, drop_tf_noise: bool = True) -> None:
        """Send a process's output to the master's log, each line after ``who``."""
        lines: queue.Queue[_Line | None] = queue.Queue()
        streams = ((process.stdout, "stdout"), (process.stderr, "stderr"))
        for stream, name in streams:
            assert stream is not None
            threading.Thread(
                target=_read_lines,
                args=(stream, name, lines, drop_tf_noise),
                name=f"pedl-worker-{process.pid}-{name}",
                daemon=True,
            ).start()

        def log() -> None:
            open_streams = len(streams)
            while open_streams:
                item = lines.get()
                if item is _EOF:
                    open_streams -= 1
                else:
                    logger.info("%s: %s", who, item[1])

        threading.Thread(target=log, name=f"pedl-worker-{process.pid}-log", daemon=True).start()

    def _watch(self, proc: _Process) -> None:
        """Ship output in batches until every stream ends, then report the exit (a gang's:
        once all its processes are reaped, the one exit status of the attempt)."""
        open_streams = 2 * (proc.gang.size if proc.gang is not None else 1)
        batch: list[_Line] = []
        deadline = time.monotonic() + _FLUSH_SECONDS
        while open_streams:
            try:
                item = proc.lines.get(timeout=max(0.0, deadline - time.monotonic()))
            except queue.Empty:
                item = ("", "", None)  # timer tick
            if item is _EOF:
                open_streams -= 1
            elif item[0]:
                batch.append(item)
            if batch and (
                len(batch) >= _FLUSH_LINES or time.monotonic() >= deadline or not open_streams
            ):
                self._ship(proc.trial_id, batch)
                batch = []
            if time.monotonic() >= deadline:
                deadline = time.monotonic() + _FLUSH_SECONDS
        worker = proc.worker
        if proc.gang is not None:
            gang_code = proc.gang.wait()
            assert gang_code is not None
            returncode, ready = gang_code, False
            failure = proc.gang.failure
            if failure is not None:
                self._ship(
                    proc.trial_id,
                    [("master", f"[master] the attempt ended: {failure.reason}", None)],
                )
            for tmpdir in proc.tmpdirs:
                remove_dir(tmpdir)
        elif worker is None:
            returncode, ready = proc.popen.wait(), False
        else:
            returncode, ready = worker.wait()
        remove_dir(proc.tmpdir)
        if self._user is not None and proc.checkpoint_dir is not None:
            self._user.seal(proc.checkpoint_dir)
        with self._lock:
            self._procs.pop(proc.trial_id, None)
            if proc.gang is not None:
                if proc.gang.failure is not None:
                    self._causes[proc.trial_id] = proc.gang.failure.reason
                self._last_workers.pop(proc.trial_id, None)
                self._last_workers[proc.trial_id] = proc.gang.states()
                while len(self._last_workers) > _LAST_WORKERS_KEPT:
                    del self._last_workers[next(iter(self._last_workers))]
            if (
                worker is not None
                and ready
                and not proc.killed
                and not self._closed.is_set()
                and not set(worker.gpus) & self._disabled_gpus()
                and len(self._procs) + len(self._pool) < self._capacity
            ):
                self._pool.put(worker)  # it keeps its GPUs
            else:
                if worker is not None and ready:
                    worker.retire()
                self._free_gpus.extend(proc.gpus)
                self._free_gpus.sort(key=lambda g: self._gpus.index(g))
        self._on_exit(proc.trial_id, returncode)

    def _ship(self, trial_id: int, batch: Sequence[_Line]) -> None:
        try:
            self._sink(trial_id, batch)
        except Exception as err:  # a log write must never take the watcher down
            print(
                f"pedl master: lost {len(batch)} log lines of trial {trial_id}: {err}",
                file=sys.stderr,
            )

    def kill(self, trial_id: int) -> None:
        with self._lock:
            proc = self._procs.get(trial_id)
            if proc is None:
                return
            proc.killed = True
            if proc.gang is not None:
                proc.gang.kill()
                return
            with contextlib.suppress(ProcessLookupError, PermissionError):
                os.killpg(proc.popen.pid, signal.SIGKILL)

    def running(self) -> set[int]:
        with self._lock:
            return set(self._procs)

    def exit_cause(self, trial_id: int) -> str | None:
        """Why the trial's latest multi-worker attempt ended early (e.g. ``rank 1 died
        (signal SIGKILL)``), once; None when it did not, or for a one-process trial."""
        with self._lock:
            return self._causes.pop(trial_id, None)

    def workers(self, trial_id: int) -> list[WorkerState]:
        """The worker processes of the trial's running attempt (one, rank 0, for a
        one-process trial), else of its latest attempt of several workers; [] if none."""
        with self._lock:
            proc = self._procs.get(trial_id)
            if proc is None:
                return list(self._last_workers.get(trial_id, []))
            if proc.gang is not None:
                return proc.gang.states()
            code = proc.popen.returncode
            return [
                WorkerState(
                    rank=0,
                    pid=proc.popen.pid,
                    state="running" if code is None else "exited",
                    exit_code=code,
                    heartbeat_age=None,
                )
            ]

    def worker_exits(self) -> list[WorkerExit]:
        """The idle warm and spare workers that exited by themselves (noticed by the
        housekeeping thread within seconds; see :meth:`WarmPool.exits`)."""
        with self._lock:
            return self._pool.exits()

    def idle_workers(self) -> list[IdleWorker]:
        """The warm and spare workers idle now (each holds a slot; see the class)."""
        with self._lock:
            return self._pool.idle()

    def shutdown(self) -> None:
        self._closed.set()
        self._housekeeping.set()
        self._template_needed.set()
        for trial_id in self.running():
            self.kill(trial_id)
        with self._lock:
            for worker in self._pool.take_all():
                self._retire(worker)
            if self._template is not None:
                self._template.retire()
        for watcher in list(self._watchers):
            watcher.join(timeout=30)
        if self._user is not None:
            self._user.remove_root()


def _read_lines(
    stream: IO[bytes],
    name: str,
    out: queue.Queue[_Line | None],
    drop_tf_noise: bool = True,
) -> None:
    try:
        for raw in iter(stream.readline, b""):
            text = ANSI.sub("", raw.decode("utf-8", errors="replace").rstrip("\r\n"))
            if not (drop_tf_noise and is_tf_noise(text)):
                out.put((name, text, None))
    finally:
        stream.close()
        out.put(_EOF)
