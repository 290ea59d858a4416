"""Multi-worker trials: start a trial's N worker processes together and watch them as one.

The one launcher of multi-worker trials, used by the local resource manager and by local
mode (see ``docs``: the contract of issue 20). :func:`gang_environments` is pure: the
variables each rank gets (:meth:`pedl.core.DistributedContext.to_env`, ``TF_CONFIG``,
``CUDA_VISIBLE_DEVICES``) from ports :func:`free_ports` picked. :class:`Gang` starts the
processes (each in its own session, with an inherited heartbeat pipe named by
``PEDL_HEARTBEAT_FD``), tags every line of their output with its rank, and ends the attempt
as one: when the chief (rank 0) exits, when any worker exits non-zero or dies, or when one
sends no heartbeat byte for ``heartbeat_timeout`` seconds (hung: SIGSTOPped, stuck), the
others get SIGTERM and, after a short grace, SIGKILL; one exit status is reported for the
trial (the failing worker's), with the failing rank and why in :attr:`Gang.failure`.
"""

from __future__ import annotations

import contextlib
import json
import os
import random
import select
import signal
import socket
import subprocess
import threading
import time
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import IO, Any

from pedl.core import DistributedContext

HEARTBEAT_FD_ENV = "PEDL_HEARTBEAT_FD"
"""The variable naming the inherited pipe a worker writes a byte to about every second."""
HEARTBEAT_TIMEOUT_SECONDS = 60.0
"""The default of the master's ``worker_heartbeat_timeout``."""
STOP_GRACE_SECONDS = 3.0
"""How long the rest of a gang gets between SIGTERM and SIGKILL, and how long the others may
go on after the chief exited 0 before they are stopped."""
_POLL_SECONDS = 0.2

OutputLine = Callable[[int, str, bytes | None], None]
"""``on_output(rank, stream, raw_line)``; ``raw_line`` None: that stream ended."""


@dataclass(frozen=True)
class GangPorts:
    """The ports of one gang on its host: the chief's two collective ports, and one
    ``TF_CONFIG`` port per worker."""

    pub_port: int
    pull_port: int
    tf_ports: tuple[int, ...]


LOWEST_PORT = 10_000
"""The lowest port :func:`free_ports` picks."""


def _ephemeral_ports_start() -> int:
    """The first port of the kernel's range for outgoing connections' source ports."""
    try:
        return int(Path("/proc/sys/net/ipv4/ip_local_port_range").read_text().split()[0])
    except (OSError, ValueError, IndexError):
        return 32768  # Linux's default


def free_ports(count: int, host: str = "127.0.0.1") -> list[int]:
    """``count`` distinct TCP ports that are free on ``host`` now, drawn at random below the
    kernel's range of ephemeral ports (from :data:`LOWEST_PORT`; from that range only where
    it leaves no room below). All are held at once, so none repeats, then released: a process
    of the gang binds each seconds later, once it has imported its framework. Meanwhile a
    port in the ephemeral range can be taken by any process's outgoing connection as its
    source port, and a worker's own attempts to connect to a port not bound yet can connect
    to themselves (TCP simultaneous open); outside it, only an explicit bind can take it."""
    high = _ephemeral_ports_start()
    draw = random.SystemRandom()
    sockets: list[socket.socket] = []
    try:
        for _ in range(100 * count if high > LOWEST_PORT else 0):
            if len(sockets) == count:
                break
            sock = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
            try:
                sock.bind((host, draw.randrange(LOWEST_PORT, high)))
            except OSError:
                sock.close()
                continue
            sockets.append(sock)
        while len(sockets) < count:  # no room below the range: any free port
            sock = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
            sockets.append(sock)
            sock.bind((host, 0))
        return [sock.getsockname()[1] for sock in sockets]
    finally:
        for sock in sockets:
            sock.close()


def pick_ports(size: int, host: str = "127.0.0.1") -> GangPorts:
    """Free ports for a gang of ``size`` workers on ``host``."""
    ports = free_ports(size + 2, host)
    return GangPorts(ports[0], ports[1], tuple(ports[2:]))


def gang_environments(
    size: int,
    ports: GangPorts,
    *,
    host: str = "127.0.0.1",
    gpus: Sequence[Sequence[str]] | None = None,
    dist_timeout: float | None = None,
) -> list[dict[str, str]]:
    """The variables of each rank (index = rank) of a gang of ``size`` workers on one host:
    :meth:`DistributedContext.to_env` (rank 0 the chief at ``host``), ``TF_CONFIG`` (a
    ``worker`` cluster of ``host:port`` per ``ports.tf_ports``, this rank's task), and
    ``CUDA_VISIBLE_DEVICES``: ``gpus[rank]`` joined, or ``""`` (CPU slots) without ``gpus``.
    ``dist_timeout``: the collectives' timeout (None: :class:`DistributedContext`'s
    default). Pure; raises ``ValueError`` for inconsistent inputs."""
    if size < 1:
        raise ValueError(f"a gang has at least one worker: size={size}")
    if len(ports.tf_ports) != size:
        raise ValueError(f"{size} workers need {size} TF_CONFIG ports: {ports.tf_ports}")
    if len({ports.pub_port, ports.pull_port, *ports.tf_ports}) != size + 2:
        raise ValueError(f"a gang's ports must be distinct: {ports}")
    if gpus is not None and len(gpus) != size:
        raise ValueError(f"{size} workers need {size} GPU lists: {gpus}")
    cluster = {"worker": [f"{host}:{port}" for port in ports.tf_ports]}
    extra: dict[str, Any] = {} if dist_timeout is None else {"timeout": dist_timeout}
    envs = []
    for rank in range(size):
        context = DistributedContext(
            rank=rank,
            size=size,
            local_rank=rank,
            local_size=size,
            chief_ip=host,
            pub_port=ports.pub_port,
            pull_port=ports.pull_port,
            **extra,
        )
        env = context.to_env()
        env["TF_CONFIG"] = json.dumps(
            {"cluster": cluster, "task": {"type": "worker", "index": rank}}
        )
        env["CUDA_VISIBLE_DEVICES"] = ",".join(gpus[rank]) if gpus is not None else ""
        envs.append(env)
    return envs


@dataclass(frozen=True)
class WorkerState:
    """One worker process of a trial's attempt, as shown to users."""

    rank: int
    pid: int
    state: str
    """``running``, ``exited`` (by itself) or ``killed`` (stopped by the launcher)."""
    exit_code: int | None
    """Its exit status once it ended (negative: the signal)."""
    heartbeat_age: float | None
    """Seconds since its last heartbeat byte (or since it started, before the first); None
    once it ended, or where the launcher expects no heartbeat (a one-process trial)."""


@dataclass(frozen=True)
class GangFailure:
    """Why a gang's attempt ended before its chief finished (or the chief's own failure)."""

    rank: int
    returncode: int
    reason: str
    """A sentence for the trial's log, e.g. ``rank 1 exited with signal SIGKILL``."""


@dataclass
class _Worker:
    rank: int
    popen: subprocess.Popen[bytes]
    heartbeat: int | None
    """Our read end of its heartbeat pipe (closed once it ended)."""
    last_beat: float
    killed: bool = False


def describe_status(returncode: int) -> str:
    """``exit code 1`` or ``signal SIGKILL``."""
    if returncode < 0:
        try:
            return f"signal {signal.Signals(-returncode).name}"
        except ValueError:
            return f"signal {-returncode}"
    return f"exit code {returncode}"


class Gang:
    """The N worker processes of one attempt of a trial (see the module docstring).

    :meth:`start` starts them all (or none: a start that fails kills those started); then a
    monitor thread applies the exit rules. :meth:`wait` blocks until every process has been
    reaped and returns the one exit status of the attempt: the failing worker's, else the
    chief's. Output goes to ``on_output(rank, stream, raw_line)`` from reader threads; each
    stream's end is signalled with ``raw_line=None``.
    """

    def __init__(
        self,
        *,
        heartbeat_timeout: float = HEARTBEAT_TIMEOUT_SECONDS,
        grace_seconds: float = STOP_GRACE_SECONDS,
        on_output: OutputLine,
        on_event: Callable[[str], None] | None = None,
    ) -> None:
        self._timeout = heartbeat_timeout
        self._grace = grace_seconds
        self._on_output = on_output
        self._on_event = on_event or (lambda _line: None)
        self._lock = threading.Lock()
        self._workers: list[_Worker] = []
        self._failure: GangFailure | None = None
        self._stopping_at: float | None = None
        """When the rest got SIGTERM (SIGKILL follows after the grace)."""
        self._chief_done_at: float | None = None
        self._done = threading.Event()
        self._returncode: int | None = None

    @property
    def size(self) -> int:
        return len(self._workers)

    def stop(self) -> None:
        """End the attempt from outside (local mode's chief finished): SIGTERM to whatever
        still runs, SIGKILL after the grace; :meth:`wait` then returns."""
        with self._lock:
            if self._stopping_at is None:
                self._stopping_at = time.monotonic()
                for worker in self._workers:
                    if worker.popen.returncode is None:
                        worker.killed = True
                        _signal(worker.popen, signal.SIGTERM)

    @property
    def pids(self) -> list[int]:
        return [w.popen.pid for w in self._workers]

    def popen(self, rank: int) -> subprocess.Popen[bytes]:
        """The process of ``rank`` (after :meth:`start`)."""
        (worker,) = (w for w in self._workers if w.rank == rank)
        return worker.popen

    @property
    def failure(self) -> GangFailure | None:
        """Why the attempt ended early (a worker failed or hung), if it did."""
        return self._failure

    def start(
        self,
        argv: Sequence[str],
        envs: Sequence[Mapping[str, str]],
        *,
        pass_fds: Sequence[Sequence[int]] = (),
        ranks: Sequence[int] | None = None,
        **popen_kwargs: Any,
    ) -> None:
        """Start one process per environment in ``envs`` (index = rank, or the rank
        ``ranks`` gives at that index: local mode runs the chief in its own process and
        starts only ranks 1..N-1), each with ``PEDL_HEARTBEAT_FD`` and the file descriptors
        ``pass_fds[i]`` inherited, in its own session, stdin closed, stdout and stderr piped;
        ``popen_kwargs`` go to every :class:`subprocess.Popen` (e.g. a trial user's). Raises
        ``OSError`` (none left running) when one cannot start."""
        if self._workers:
            raise RuntimeError("a gang starts once")
        numbers = list(range(len(envs))) if ranks is None else list(ranks)
        if len(numbers) != len(envs):
            raise ValueError(f"{len(envs)} environments, {len(numbers)} ranks")
        try:
            for index, env in enumerate(envs):
                rank = numbers[index]
                read_end, write_end = os.pipe()
                try:
                    fds = (write_end, *(pass_fds[index] if pass_fds else ()))
                    popen = subprocess.Popen(
                        list(argv),
                        stdin=subprocess.DEVNULL,
                        stdout=subprocess.PIPE,
                        stderr=subprocess.PIPE,
                        env={**env, HEARTBEAT_FD_ENV: str(write_end)},
                        start_new_session=True,
                        pass_fds=fds,
                        **popen_kwargs,
                    )
                except BaseException:
                    os.close(read_end)
                    raise
                finally:
                    os.close(write_end)
                os.set_blocking(read_end, False)
                self._workers.append(_Worker(rank, popen, read_end, time.monotonic()))
        except BaseException:
            for worker in self._workers:
                _signal(worker.popen, signal.SIGKILL)
                worker.popen.wait()
                self._close_heartbeat(worker)
            raise
        for worker in self._workers:
            for stream, name in ((worker.popen.stdout, "stdout"), (worker.popen.stderr, "stderr")):
                assert stream is not None
                threading.Thread(
                    target=self._read,
                    args=(worker.rank, stream, name),
                    name=f"pedl-gang-{worker.popen.pid}-{name}",
                    daemon=True,
                ).start()
        threading.Thread(target=self._monitor, name="pedl-gang-monitor", daemon=True).start()

    def _read(self, rank: int, stream: IO[bytes], name: str) -> None:
        try:
            for raw in iter(stream.readline, b""):
                self._on_output(rank, name, raw)
        finally:
            stream.close()
            self._on_output(rank, name, None)

    def kill(self) -> None:
        """Kill every process now (SIGKILL to each one's process group)."""
        with self._lock:
            for worker in self._workers:
                if worker.popen.returncode is None:
                    worker.killed = True
                    _signal(worker.popen, signal.SIGKILL)

    def wait(self, timeout: float | None = None) -> int | None:
        """The attempt's exit status once every process is reaped (None on timeout)."""
        self._done.wait(timeout)
        return self._returncode

    def states(self) -> list[WorkerState]:
        """Each worker's state now, by rank."""
        now = time.monotonic()
        with self._lock:
            return [
                WorkerState(
                    rank=w.rank,
                    pid=w.popen.pid,
                    state="running"
                    if w.popen.returncode is None
                    else ("killed" if w.killed else "exited"),
                    exit_code=w.popen.returncode,
                    heartbeat_age=round(now - w.last_beat, 1)
                    if w.popen.returncode is None
                    else None,
                )
                for w in self._workers
            ]

    # the monitor ---------------------------------------------------------------------------

    def _monitor(self) -> None:
        while True:
            self._read_heartbeats()
            now = time.monotonic()
            with self._lock:
                ended = [
                    w
                    for w in self._workers
                    if w.popen.returncode is None and w.popen.poll() is not None
                ]
                # A worker killed by a signal is the cause when others ended since the last
                # look too (they fail because it went: a peer's collective errors out).
                for worker in sorted(ended, key=lambda w: (w.popen.returncode or 0) >= 0):
                    self._close_heartbeat(worker)
                    self._on_exit(worker, now)
                if self._stopping_at is None:
                    self._check_hung(now)
                    self._check_chief_grace(now)
                elif now - self._stopping_at >= self._grace:
                    for worker in self._workers:
                        if worker.popen.returncode is None:
                            _signal(worker.popen, signal.SIGKILL)
                if all(w.popen.returncode is not None for w in self._workers):
                    self._returncode = self._result()
                    break
            time.sleep(_POLL_SECONDS)
        self._done.set()

    def _read_heartbeats(self) -> None:
        fds = [w.heartbeat for w in self._workers if w.heartbeat is not None]
        if not fds:
            return
        with contextlib.suppress(OSError, ValueError):
            ready, _, _ = select.select(fds, [], [], 0)
            for worker in self._workers:
                if worker.heartbeat in ready:
                    try:
                        data = os.read(worker.heartbeat, 4096)
                    except BlockingIOError:
                        continue
                    if data:
                        worker.last_beat = time.monotonic()
                    else:  # the process (and whatever inherited the pipe) closed it
                        self._close_heartbeat(worker)

    def _close_heartbeat(self, worker: _Worker) -> None:
        if worker.heartbeat is not None:
            os.close(worker.heartbeat)
            worker.heartbeat = None

    def _on_exit(self, worker: _Worker, now: float) -> None:
        """A worker was reaped (the caller holds the lock)."""
        code = worker.popen.returncode
        assert code is not None
        if self._stopping_at is not None or worker.killed:
            return
        if code != 0:
            what = "died" if code < 0 else "failed"
            self._stop_rest(
                GangFailure(
                    worker.rank, code, f"rank {worker.rank} {what} ({describe_status(code)})"
                ),
                now,
            )
        elif worker.rank == 0:
            self._chief_done_at = now

    def _check_hung(self, now: float) -> None:
        for worker in self._workers:
            if worker.popen.returncode is not None or worker.heartbeat is None:
                continue
            silent = now - worker.last_beat
            if silent >= self._timeout:
                reason = (
                    f"rank {worker.rank} (pid {worker.popen.pid}) hung: no heartbeat for "
                    f"{silent:.1f} s (worker_heartbeat_timeout {self._timeout:g} s)"
                )
                self._stop_rest(GangFailure(worker.rank, -signal.SIGKILL, reason), now)
                return

    def _check_chief_grace(self, now: float) -> None:
        if self._chief_done_at is None or now - self._chief_done_at < self._grace:
            return
        running = [w.rank for w in self._workers if w.popen.returncode is None]
        if running:
            self._on_event(
                f"the chief exited {self._grace:g} s ago; stopping the workers still running "
                f"(ranks {', '.join(map(str, running))})"
            )
            self._stopping_at = now
            for worker in self._workers:
                if worker.popen.returncode is None:
                    worker.killed = True
                    _signal(worker.popen, signal.SIGTERM)

    def _stop_rest(self, failure: GangFailure, now: float) -> None:
        """End the attempt for ``failure``: SIGTERM the others (SIGKILL for a hung one, which
        could not act on SIGTERM), SIGKILL after the grace."""
        self._failure = failure
        self._stopping_at = now
        others = [w for w in self._workers if w.popen.returncode is None]
        self._on_event(
            f"{failure.reason}; stopping the other workers"
            + (f" (ranks {', '.join(str(w.rank) for w in others)})" if others else "")
        )
        for worker in others:
            worker.killed = True
            hung = worker.rank == failure.rank
            _signal(worker.popen, signal.SIGKILL if hung else signal.SIGTERM)

    def _result(self) -> int:
        if self._failure is not None:
            return self._failure.returncode
        codes = {w.rank: w.popen.returncode for w in self._workers}
        chief = codes.get(0, 0)  # no chief here (local mode runs it): the others ended well
        assert chief is not None
        return chief


def _signal(popen: subprocess.Popen[bytes], sig: signal.Signals) -> None:
    """Signal the process group of a worker (its own session)."""
    with contextlib.suppress(ProcessLookupError, PermissionError):
        os.killpg(popen.pid, sig)
