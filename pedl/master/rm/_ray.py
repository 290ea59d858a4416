"""The ray resource manager: each trial is a Ray actor on an existing cluster, which runs the
trial process on its node.

The master joins the cluster as a Ray driver (``ray.init(address=...)``) from a thread of its
own that retries while the cluster cannot be reached. A trial's attempt is one actor
(:class:`_TrialRunner`) that asks Ray for the trial's slots (``num_cpus`` per slot on a
cluster without GPUs, ``num_gpus`` per slot where it has GPUs, and a sliver of the custom
resource named as the experiment's ``resources.resource_pool``); once Ray placed it, it starts
``python -m pedl.exec.trial`` on its node exactly as the local resource manager does, and the
master pulls the process's output lines and, at the end, its exit status. Ray is imported
only when a :class:`RayResourceManager` is made (``pedl[ray]``).
"""

from __future__ import annotations

import contextlib
import json
import logging
import os
import queue
import secrets
import shutil
import signal
import socket
import subprocess
import sys
import threading
import time
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import IO, Any

from pedl.exec import TOKEN_FD_ENV, WorkerState, token_channel
from pedl.master.rm._base import ExitHandler, LogSink, ResourceManager, TrialLaunch

logger = logging.getLogger("pedl.master")

RAY_NAMESPACE = "pedl"
POOL_RESOURCE_SHARE = 0.001
"""The amount of a resource pool's custom resource each trial asks for: a node started with
``--resources='{"POOL": 1}'`` is in pool ``POOL`` (its CPUs or GPUs bound how many trials run
there)."""
_REFRESH_SECONDS = 2.0
_RETRY_SECONDS = 5.0
_PULL_SECONDS = 0.5
_KILL_GRACE_SECONDS = 10.0
_FLUSH_LINES = 500
_LAST_WORKERS_KEPT = 256
_SIGKILL = -int(signal.SIGKILL)

_Line = tuple[str, str, int | None]

MOUNT_MARK = ".pedl-mount-check"
"""The file the master writes (a random value) into a trial's ``shared_fs`` checkpoint
directory, which the trial's node must see the same before the trial starts there."""


def check_mount(directory: str, value: str, node: str) -> None:
    """Raise ``RuntimeError`` unless ``directory`` holds :data:`MOUNT_MARK` with ``value``
    here (the master's directory is mounted at the same path on this node, ``node``)."""
    try:
        seen = (Path(directory) / MOUNT_MARK).read_text()
    except OSError:
        seen = None
    if seen != value:
        raise RuntimeError(
            f"the checkpoint storage directory {directory} (shared_fs) on the Ray node {node} "
            f"is not the master's (its {MOUNT_MARK} file is missing or differs): mount the same "
            "shared file system at that path on every node, or use s3 checkpoint storage"
        )


def slot_resources(slots: int, *, gpus: bool, resource_pool: str | None = None) -> dict[str, Any]:
    """The Ray actor options that hold ``slots`` slots: GPUs where the cluster has GPUs (and
    no CPU), else CPUs; plus :data:`POOL_RESOURCE_SHARE` of ``resource_pool``'s custom
    resource when one is named (``default`` and ``""`` name none)."""
    options: dict[str, Any] = (
        {"num_gpus": slots, "num_cpus": 0} if gpus else {"num_cpus": slots, "num_gpus": 0}
    )
    if resource_pool and resource_pool != "default":
        options["resources"] = {resource_pool: POOL_RESOURCE_SHARE}
    return options


def gang_order(places: Sequence[Mapping[str, Any]]) -> list[int]:
    """The bundle indexes of a multi-worker trial's workers in rank order: grouped by node,
    the nodes in the order their first bundle comes (so bundle 0 is the chief, and the workers
    of one node have consecutive ranks)."""
    nodes: dict[str, list[int]] = {}
    for index, place in enumerate(places):
        nodes.setdefault(place["node_id"], []).append(index)
    return [index for indexes in nodes.values() for index in indexes]


def spread_environments(
    places: Sequence[Mapping[str, Any]], dist_timeout: float | None = None
) -> list[dict[str, str]]:
    """The contract's variables of each rank (index = rank; ``places`` in rank order, each
    ``{"node_id", "ip", "ports"}``): :meth:`pedl.core.DistributedContext.to_env` (local and
    cross ranks by node, the chief at rank 0's address and ports), ``TF_CONFIG`` (each rank's
    node address and first port) and, on CPU slots, ``CUDA_VISIBLE_DEVICES=""`` (on GPUs Ray
    sets it to the actor's GPU). Pure."""
    from pedl.core import DistributedContext

    size = len(places)
    node_order = list(dict.fromkeys(place["node_id"] for place in places))
    by_node = {
        node: [r for r, p in enumerate(places) if p["node_id"] == node] for node in node_order
    }
    chief = places[0]
    cluster = {"worker": [f"{place['ip']}:{place['ports'][0]}" for place in places]}
    extra: dict[str, Any] = {} if dist_timeout is None else {"timeout": dist_timeout}
    envs = []
    for rank, place in enumerate(places):
        local = by_node[place["node_id"]]
        context = DistributedContext(
            rank=rank,
            size=size,
            local_rank=local.index(rank),
            local_size=len(local),
            cross_rank=node_order.index(place["node_id"]),
            cross_size=len(node_order),
            chief_ip=chief["ip"],
            pub_port=chief["ports"][1],
            pull_port=chief["ports"][2],
            **extra,
        )
        env = context.to_env()
        env["TF_CONFIG"] = json.dumps(
            {"cluster": cluster, "task": {"type": "worker", "index": rank}}
        )
        envs.append(env)
    return envs


def probe(address: str | None, timeout: float) -> None:
    """Raise ``OSError`` unless a TCP connection to ``address`` (``HOST:PORT`` or
    ``ray://HOST:PORT``) opens within ``timeout`` seconds (no address: nothing to check)."""
    if not address or address == "auto":
        return
    host, _, port = address.split("://", 1)[-1].rpartition(":")
    if not host or not port.isdigit():
        raise ValueError(f"{address!r} is no HOST:PORT")
    with socket.create_connection((host.strip("[]"), int(port)), timeout=timeout):
        pass


def slots_of(cluster_resources: Mapping[str, float]) -> tuple[int, bool]:
    """``(slots, gpus)`` of a cluster with ``ray.cluster_resources()``: its GPUs if it has
    any, else its CPUs."""
    gpus = int(cluster_resources.get("GPU", 0))
    if gpus:
        return gpus, True
    return int(cluster_resources.get("CPU", 0)), False


class _TrialRunner:
    """The Ray actor of one trial attempt (or of one worker of a multi-worker attempt): starts
    the trial process on its node, hands out its output and exit status (runs on a cluster
    node; every method is called by the master)."""

    def __init__(self) -> None:
        self._popen: subprocess.Popen[bytes] | None = None
        self._gang: Any = None
        self._lines: queue.Queue[_Line | None] = queue.Queue()
        self._open = 2
        self._tmpdir: Path | None = None
        self._killed = False

    @staticmethod
    def where() -> dict[str, Any]:
        """This actor's node: its Ray id and IP address, and this process's pid."""
        import ray

        return {
            "node_id": ray.get_runtime_context().get_node_id(),
            "ip": ray.util.get_node_ip_address(),
            "pid": os.getpid(),
        }

    def prepare(self) -> dict[str, Any]:
        """Where this worker of a multi-worker trial runs (:meth:`where`) and three ports free
        on its node (``ports``: its ``TF_CONFIG`` port, then, for the chief, the collectives'
        publish and pull ports)."""
        from pedl.exec import free_ports

        return {**self.where(), "ports": free_ports(3, "0.0.0.0")}

    def _environment(
        self,
        trial_id: int,
        python: str | None,
        env: dict[str, str],
        mount: tuple[str, str] | None = None,
    ) -> tuple[str, dict[str, str]]:
        """The trial process's program and environment on this node (a private TMPDIR made);
        ``mount``: the trial's ``shared_fs`` directory and the master's mark in it
        (:func:`check_mount`)."""
        from pedl.master.rm._isolation import private_dir, private_variables, trial_environment
        from pedl.master.rm._local import TRIAL_PYTHON_VARIABLE

        if mount is not None:
            check_mount(mount[0], mount[1], self.where()["ip"])
        program = env.get(TRIAL_PYTHON_VARIABLE) or python or sys.executable
        if shutil.which(program) is None:
            raise FileNotFoundError(
                f"{program} (the trial's Python) is no executable on the Ray node "
                f"{self.where()['ip']}"
            )
        self._tmpdir = private_dir(trial_id)
        return program, {
            **trial_environment(os.environ),
            "TF_CPP_MIN_LOG_LEVEL": "2",
            "PYTHONUNBUFFERED": "1",
            **env,
            # the trial process exits when this actor's process (its parent) dies
            "PEDL_MASTER_PID": str(os.getpid()),
            **private_variables(self._tmpdir, None),
        }

    def start(
        self,
        trial_id: int,
        python: str | None,
        env: dict[str, str],
        token_box: list[Any],
        mount: tuple[str, str] | None = None,
    ) -> dict[str, Any]:
        """Start ``python -m pedl.exec.trial`` with the trial's environment (the node's own,
        without the master's variables, plus ``env``), its token read from the object in
        ``token_box`` and handed over an inherited socket; where it runs."""
        import ray

        from pedl.master.rm._isolation import remove_dir
        from pedl.master.rm._local import TRIAL_MODULE

        token = ray.get(token_box[0])
        where = self.where()
        if self._killed:
            return where
        program, full_env = self._environment(trial_id, python, env, mount)
        try:
            with token_channel(token) as channel:
                self._popen = subprocess.Popen(
                    [program, "-m", TRIAL_MODULE],
                    stdin=subprocess.DEVNULL,
                    stdout=subprocess.PIPE,
                    stderr=subprocess.PIPE,
                    env={**full_env, TOKEN_FD_ENV: str(channel.fileno())},
                    start_new_session=True,
                    pass_fds=(channel.fileno(),),
                )
        except OSError:
            remove_dir(self._tmpdir)
            raise
        del token
        drop_noise = full_env["TF_CPP_MIN_LOG_LEVEL"] != "0"
        for stream, name in ((self._popen.stdout, "stdout"), (self._popen.stderr, "stderr")):
            assert stream is not None
            threading.Thread(
                target=self._read, args=(stream, name, drop_noise), daemon=True
            ).start()
        where["trial_pid"] = self._popen.pid
        return where

    def start_worker(
        self,
        trial_id: int,
        python: str | None,
        env: dict[str, str],
        token_box: list[Any],
        rank: int,
        heartbeat_timeout: float,
        mount: tuple[str, str] | None = None,
    ) -> dict[str, Any]:
        """Start the worker ``rank`` of a multi-worker trial as :meth:`start` starts a trial
        process, with ``env`` holding its distributed variables, as a one-process
        :class:`~pedl.exec._gang.Gang` (its heartbeat pipe ``PEDL_HEARTBEAT_FD``: no
        byte for ``heartbeat_timeout`` s and it is killed as hung); its lines carry its
        rank."""
        import ray

        from pedl._tf_noise import ANSI, is_tf_noise
        from pedl.exec import Gang
        from pedl.master.rm._isolation import remove_dir
        from pedl.master.rm._local import TRIAL_MODULE

        token = ray.get(token_box[0])
        where = self.where()
        if self._killed:
            return where
        program, full_env = self._environment(trial_id, python, env, mount)
        drop_noise = full_env["TF_CPP_MIN_LOG_LEVEL"] != "0"

        def on_output(worker_rank: int, stream: str, raw: bytes | None) -> None:
            if raw is None:
                self._lines.put(None)
                return
            text = ANSI.sub("", raw.decode("utf-8", errors="replace").rstrip("\r\n"))
            if not (drop_noise and is_tf_noise(text)):
                self._lines.put((stream, text, worker_rank))

        def on_event(line: str) -> None:
            self._lines.put(("master", f"[master] {line}", None))

        gang = Gang(heartbeat_timeout=heartbeat_timeout, on_output=on_output, on_event=on_event)
        channel = token_channel(token)
        try:
            gang.start(
                [program, "-m", TRIAL_MODULE],
                [{**full_env, TOKEN_FD_ENV: str(channel.fileno())}],
                pass_fds=[(channel.fileno(),)],
                ranks=[rank],
            )
        except OSError:
            remove_dir(self._tmpdir)
            raise
        finally:
            channel.close()
        del token
        self._gang = gang
        where["trial_pid"] = gang.pids[0]
        return where

    def _read(self, stream: IO[bytes], name: str, drop_noise: bool) -> None:
        from pedl._tf_noise import ANSI, is_tf_noise

        try:
            for raw in iter(stream.readline, b""):
                text = ANSI.sub("", raw.decode("utf-8", errors="replace").rstrip("\r\n"))
                if not (drop_noise and is_tf_noise(text)):
                    self._lines.put((name, text, None))
        finally:
            stream.close()
            self._lines.put(None)

    def pull(self, wait: float) -> tuple[list[_Line], int | None, float | None]:
        """The output lines written since the last call (waiting up to ``wait`` s for the
        first), the exit status once every line has been handed out (else None), and the
        age of a multi-worker trial's worker's last heartbeat (else None)."""
        lines, code = self._pull(wait)
        age = None
        if self._gang is not None and code is None:
            age = self._gang.states()[0].heartbeat_age
        return lines, code, age

    def _pull(self, wait: float) -> tuple[list[_Line], int | None]:
        from pedl.master.rm._isolation import remove_dir

        lines: list[_Line] = []
        deadline = time.monotonic() + wait
        while self._open and len(lines) < _FLUSH_LINES:
            try:
                timeout = max(0.0, deadline - time.monotonic())
                item = self._lines.get(timeout=timeout) if not lines else self._lines.get_nowait()
            except queue.Empty:
                break
            if item is None:
                self._open -= 1
            else:
                lines.append(item)
        if self._popen is None and self._gang is None:
            return lines, (_SIGKILL if self._killed else None)
        if self._open or lines:
            return lines, None
        if self._gang is not None:
            code = self._gang.wait()
            while not self._lines.empty():  # the gang's own event lines
                item = self._lines.get_nowait()
                if item is not None:
                    lines.append(item)
        else:
            assert self._popen is not None
            code = self._popen.wait()
        remove_dir(self._tmpdir)
        self._tmpdir = None
        return lines, code

    def kill(self) -> None:
        """SIGKILL the trial process's group (if started; else it never starts)."""
        self._killed = True
        if self._gang is not None:
            self._gang.kill()
        elif self._popen is not None:
            with contextlib.suppress(ProcessLookupError, PermissionError):
                os.killpg(self._popen.pid, signal.SIGKILL)


@dataclass
class _Attempt:
    trial_id: int
    actor: Any
    killed: bool = False
    killed_at: float = 0.0
    where: dict[str, Any] = field(default_factory=dict)
    workers: list[Any] = field(default_factory=list)
    """The actors of a multi-worker attempt (``actor`` is then None), by bundle."""
    group: Any = None
    """The placement group of a multi-worker attempt."""
    pids: dict[int, int] = field(default_factory=dict)
    """Each started worker's trial process id (on its node), by rank."""
    codes: dict[int, int] = field(default_factory=dict)
    """Each ended worker's exit status, by rank."""
    beats: dict[int, tuple[float, float]] = field(default_factory=dict)
    """Each running worker's heartbeat age as its node last told it, and when (the master's
    monotonic clock), by rank (multi-worker attempts)."""

    def states(self) -> list[WorkerState]:
        """Its worker processes, by rank (their heartbeats are watched on their nodes; a
        running worker's heartbeat age is its node's last word plus the time since)."""
        now = time.monotonic()
        return [
            WorkerState(
                rank=rank,
                pid=pid,
                state="running"
                if rank not in self.codes
                else ("killed" if self.killed else "exited"),
                exit_code=self.codes.get(rank),
                heartbeat_age=round(self.beats[rank][0] + now - self.beats[rank][1], 1)
                if rank not in self.codes and rank in self.beats
                else None,
            )
            for rank, pid in sorted(self.pids.items())
        ]


class RayResourceManager(ResourceManager):
    """Runs each trial as a Ray actor (:class:`_TrialRunner`) on an existing Ray cluster.

    Slots are the cluster's GPUs, or without GPUs its CPUs (``ray.cluster_resources()``, read
    again every 2 s: nodes that join or leave change :attr:`total_slots`); each one-process
    trial's actor holds its slots while it runs. Until the cluster is reached (retried every
    few seconds), or while it offers no slot, :meth:`unavailable` says why and the master
    keeps trials queued with that reason.

    The trial's process gets the node's environment without the master's variables, the
    experiment's variables, ``PEDL_MASTER_URL`` (the master's advertised address),
    ``PEDL_TRIAL_ID``, ``PEDL_MASTER_PID`` (the actor's process: the trial exits when its actor
    dies) and a private ``TMPDIR``. Its token is put in Ray's object store by the master and
    handed to the actor as an object reference inside a list (so not resolved into the call's
    arguments, which Ray's dashboard and state API show); the actor reads it, passes it to the
    trial process over an inherited socket as the local resource manager does, and the master
    drops the object once the process started, so that Ray frees it. The master's own
    environment never leaves its machine.

    A trial's exit status reaches ``on_exit`` as a local process's does. A lost actor (its node
    died, or its process was killed outside PEDL) is reported as SIGKILL, after a line in the
    trial's log that says which node was lost. Warm workers are not used (see docs/ray.md).

    A trial of N > 1 slots is a placement group of N one-slot bundles (``placement_strategy``
    PACK or SPREAD; Ray places all or none) with one actor per bundle; once all are placed,
    each picks free ports on its node, the master gives each worker the contract's variables
    (:func:`spread_environments`: ranks grouped by node, bundle 0's worker the chief) and each
    actor starts its worker as a one-process :class:`~pedl.exec._gang.Gang` (heartbeat
    pipe, hung workers killed after ``heartbeat_timeout``). The master applies the gang's exit
    rules across nodes and reports one exit: the first failing worker's (the others killed),
    else the chief's (the others stopped 3 s after the chief exited 0).
    """

    def __init__(
        self,
        *,
        address: str | None,
        on_exit: ExitHandler,
        log_sink: LogSink,
        python: str | None = None,
        placement_strategy: str = "PACK",
        connect_timeout: float = 30.0,
        heartbeat_timeout: float = 60.0,
    ) -> None:
        import ray  # noqa: F401 (fails early without pedl[ray])

        self._address = address or os.environ.get("RAY_ADDRESS") or None
        self._on_exit = on_exit
        self._sink = log_sink
        self._python = python
        self._strategy = placement_strategy
        self._connect_timeout = connect_timeout
        self._heartbeat_timeout = heartbeat_timeout
        self._mount_marks: dict[str, str] = {}
        self._causes: dict[int, str] = {}
        self._last_workers: dict[int, list[WorkerState]] = {}
        self._mount_lock = threading.Lock()
        self._lock = threading.Lock()
        self._attempts: dict[int, _Attempt] = {}
        self._watchers: list[threading.Thread] = []
        self._slots = 0
        self._gpus = False
        self._reason: str | None = f"connecting to the Ray cluster at {self._address}"
        self._connected = threading.Event()
        self._closed = threading.Event()
        self._monitor = threading.Thread(target=self._watch_cluster, name="pedl-ray", daemon=True)
        self._monitor.start()

    # the cluster -----------------------------------------------------------------------------

    def _watch_cluster(self) -> None:
        """Join the cluster (retrying), then follow its resources."""
        import ray

        while not self._closed.is_set():
            if not self._connected.is_set():
                try:
                    probe(self._address, self._connect_timeout)
                    ray.init(
                        address=self._address,
                        namespace=RAY_NAMESPACE,
                        log_to_driver=False,
                        logging_level=logging.WARNING,
                        configure_logging=False,
                    )
                except Exception as err:  # ConnectionError, RuntimeError, TimeoutError ...
                    with contextlib.suppress(Exception):
                        ray.shutdown()
                    why = f"the Ray cluster at {self._address} cannot be reached: {err}"
                    if why != self._reason:
                        logger.warning("%s (retrying every %.0f s)", why, _RETRY_SECONDS)
                    with self._lock:
                        self._reason = why
                    self._closed.wait(_RETRY_SECONDS)
                    continue
                logger.info("joined the Ray cluster at %s", self._address)
                self._connected.set()
            try:
                slots, gpus = slots_of(ray.cluster_resources())
                reason = (
                    None
                    if slots
                    else f"the Ray cluster at {self._address} offers no "
                    f"{'GPU' if gpus else 'CPU'} now (no live node has one)"
                )
            except Exception as err:
                slots, gpus = 0, self._gpus
                reason = f"the Ray cluster at {self._address} cannot be reached: {err}"
            with self._lock:
                if slots != self._slots:
                    logger.info("the Ray cluster offers %d slot(s)", slots)
                self._slots, self._gpus, self._reason = slots, gpus, reason
            self._closed.wait(_REFRESH_SECONDS)

    def wait_connected(self, timeout: float) -> bool:
        """Whether the cluster was joined within ``timeout`` seconds."""
        return self._connected.wait(timeout)

    @property
    def total_slots(self) -> int:
        with self._lock:
            return self._slots

    @property
    def uses_gpus(self) -> bool:
        with self._lock:
            return self._gpus

    def unavailable(self) -> str | None:
        with self._lock:
            return self._reason

    # trials ----------------------------------------------------------------------------------

    def start(self, launch: TrialLaunch) -> None:
        import ray

        if not self._connected.is_set():
            raise RuntimeError(self._reason or "the Ray cluster is not joined")
        with self._lock:
            if launch.trial_id in self._attempts:
                raise RuntimeError(f"trial {launch.trial_id} is already running")
            if launch.slots > 1:
                self._start_gang(launch)
                return
            options = slot_resources(
                launch.slots, gpus=self._gpus, resource_pool=launch.resource_pool
            )
            runner: Any = ray.remote(_TrialRunner)
            runner = runner.options(
                max_concurrency=4,
                max_restarts=0,
                max_task_retries=0,
                **options,
            )
            actor: Any = runner.remote()
            token_ref = ray.put(launch.token)
            env = {
                **launch.env,
                "PEDL_MASTER_URL": launch.master_url,
                "PEDL_TRIAL_ID": str(launch.trial_id),
            }
            started = actor.start.remote(
                launch.trial_id, self._python, env, [token_ref], self._mount_mark(launch)
            )
            attempt = _Attempt(launch.trial_id, actor)
            self._attempts[launch.trial_id] = attempt
            watcher = threading.Thread(
                target=self._watch,
                args=(attempt, started, token_ref, options),
                name=f"pedl-ray-trial-{launch.trial_id}",
                daemon=True,
            )
            self._watchers = [w for w in self._watchers if w.is_alive()]
            self._watchers.append(watcher)
            watcher.start()

    def _watch(self, attempt: _Attempt, started: Any, token_ref: Any, options: dict) -> None:
        """Wait for the actor to start the trial process, ship its output, report its exit."""
        import ray

        trial_id = attempt.trial_id
        code: int | None = None
        try:
            try:
                attempt.where = ray.get(started)
                if "trial_pid" in attempt.where:
                    attempt.pids[0] = attempt.where["trial_pid"]
            finally:
                del token_ref  # the last reference: Ray frees the token's object
            if not attempt.killed:
                where = attempt.where
                self._ship(
                    trial_id,
                    [
                        (
                            "master",
                            f"[master] the trial runs on the Ray node {where['node_id']} "
                            f"({where['ip']}), process {where.get('trial_pid')}",
                            None,
                        )
                    ],
                )
            while code is None:
                wait = _PULL_SECONDS
                if attempt.killed and time.monotonic() - attempt.killed_at > _KILL_GRACE_SECONDS:
                    code = _SIGKILL
                    break
                lines, code, _ = ray.get(attempt.actor.pull.remote(wait))
                if lines:
                    self._ship(trial_id, lines)
        except Exception as err:
            code = _SIGKILL
            if not attempt.killed:
                self._ship(trial_id, [("master", f"[master] {self._loss(attempt, err)}", None)])
                self._causes[trial_id] = self._cause(attempt, err)
        finally:
            with contextlib.suppress(Exception):
                ray.kill(attempt.actor, no_restart=True)
            if attempt.pids:
                attempt.codes.setdefault(0, _SIGKILL if code is None else code)
            self._ended(attempt)
            self._on_exit(trial_id, _SIGKILL if code is None else code)

    @staticmethod
    def _loss(attempt: _Attempt, err: BaseException) -> str:
        """What the trial's log says when its actor failed."""
        import ray

        where = attempt.where
        node = (
            f"the Ray node {where['node_id']} ({where['ip']})"
            if where
            else "the Ray node it was placed on"
        )
        if isinstance(err, ray.exceptions.RayActorError | ray.exceptions.NodeDiedError):
            first = str(err).strip().splitlines()[0] if str(err).strip() else type(err).__name__
            return (
                f"the trial's Ray actor died: {node} was lost or its worker process was killed "
                f"({type(err).__name__}: {first}); the attempt ended"
            )
        return f"the trial could not run on the Ray cluster: {type(err).__name__}: {err}"

    @staticmethod
    def _cause(attempt: _Attempt, err: BaseException) -> str:
        """The exit's cause for the trial's error (:meth:`exit_cause`)."""
        import ray

        where = attempt.where
        node = f"its Ray node {where['node_id']} ({where['ip']})" if where else "its Ray node"
        if isinstance(err, ray.exceptions.RayActorError | ray.exceptions.NodeDiedError):
            return f"{node} was lost or its Ray worker process was killed"
        first = (str(err).strip().splitlines() or [""])[0]
        return f"it could not run on the Ray cluster: {type(err).__name__}: {first}"

    def exit_cause(self, trial_id: int) -> str | None:
        """Why the trial's latest attempt ended when its Ray actor failed (its node lost, ...),
        once."""
        with self._lock:
            return self._causes.pop(trial_id, None)

    def _ship(self, trial_id: int, batch: list[_Line]) -> None:
        try:
            self._sink(trial_id, batch)
        except Exception as err:  # a log write must never take the watcher down
            print(
                f"pedl master: lost {len(batch)} log lines of trial {trial_id}: {err}",
                file=sys.stderr,
            )

    def kill(self, trial_id: int) -> None:
        with self._lock:
            attempt = self._attempts.get(trial_id)
            if attempt is None or attempt.killed:
                return
            attempt.killed, attempt.killed_at = True, time.monotonic()
            placed = bool(attempt.where)
        if attempt.workers:
            for worker in attempt.workers:
                if placed:
                    worker.kill.remote()
                else:
                    import ray

                    with contextlib.suppress(Exception):
                        ray.kill(worker, no_restart=True)
            return
        if placed:
            attempt.actor.kill.remote()
        else:  # not placed yet (or starting): end the actor, the process dies with it
            import ray

            with contextlib.suppress(Exception):
                ray.kill(attempt.actor, no_restart=True)

    def _mount_mark(self, launch: TrialLaunch) -> tuple[str, str] | None:
        """With a ``shared_fs`` checkpoint directory: the directory (made) and the random
        value this master wrote into its :data:`MOUNT_MARK` file (once per directory), which
        the trial's node checks (:func:`check_mount`); else None."""
        directory = launch.checkpoint_dir
        if directory is None:
            return None
        with self._mount_lock:
            value = self._mount_marks.get(directory)
            if value is None:
                value = secrets.token_hex(16)
                Path(directory).mkdir(parents=True, exist_ok=True)
                (Path(directory) / MOUNT_MARK).write_text(value)
                self._mount_marks[directory] = value
        return directory, value

    # multi-worker trials --------------------------------------------------------------------

    def _start_gang(self, launch: TrialLaunch) -> None:
        """Ask Ray for a placement group of ``launch.slots`` one-slot bundles (all or none;
        ``placement_strategy``), one worker actor per bundle; a thread of the trial does the
        rest (the caller holds the lock)."""
        import ray
        from ray.util.placement_group import placement_group
        from ray.util.scheduling_strategies import PlacementGroupSchedulingStrategy

        one = slot_resources(1, gpus=self._gpus, resource_pool=launch.resource_pool)
        bundle = {
            **({"GPU": 1} if self._gpus else {"CPU": 1}),
            **one.get("resources", {}),
        }
        group = placement_group(
            [dict(bundle) for _ in range(launch.slots)], strategy=self._strategy
        )
        runner: Any = ray.remote(_TrialRunner)
        workers = [
            runner.options(
                max_concurrency=4,
                max_restarts=0,
                max_task_retries=0,
                scheduling_strategy=PlacementGroupSchedulingStrategy(
                    placement_group=group, placement_group_bundle_index=index
                ),
                **one,
            ).remote()
            for index in range(launch.slots)
        ]
        attempt = _Attempt(launch.trial_id, None, workers=workers, group=group)
        self._attempts[launch.trial_id] = attempt
        watcher = threading.Thread(
            target=self._watch_gang,
            args=(attempt, launch),
            name=f"pedl-ray-trial-{launch.trial_id}",
            daemon=True,
        )
        self._watchers = [w for w in self._watchers if w.is_alive()]
        self._watchers.append(watcher)
        watcher.start()

    def _watch_gang(self, attempt: _Attempt, launch: TrialLaunch) -> None:
        """Wait until Ray placed every worker, start them with the contract's variables, ship
        their output, apply the gang's exit rules across nodes, report one exit."""
        import ray
        from ray.util.placement_group import remove_placement_group

        trial_id = attempt.trial_id
        code: int | None = None
        try:
            ready = attempt.group.ready()
            while not ray.wait([ready], timeout=1.0)[0]:
                if attempt.killed:
                    code = _SIGKILL
                    return
            places = ray.get([worker.prepare.remote() for worker in attempt.workers])
            order = gang_order(places)
            workers = [attempt.workers[index] for index in order]
            places = [places[index] for index in order]
            attempt.where = places[0]
            envs = spread_environments(places)
            mount = self._mount_mark(launch)
            token_ref = ray.put(launch.token)
            base = {
                **launch.env,
                "PEDL_MASTER_URL": launch.master_url,
                "PEDL_TRIAL_ID": str(trial_id),
                # CPU slots: no worker sees a GPU (on GPU slots Ray sets each one's GPU)
                **({} if self._gpus else {"CUDA_VISIBLE_DEVICES": ""}),
            }
            try:
                started = ray.get(
                    [
                        worker.start_worker.remote(
                            trial_id,
                            self._python,
                            {**base, **envs[rank]},
                            [token_ref],
                            rank,
                            self._heartbeat_timeout,
                            mount,
                        )
                        for rank, worker in enumerate(workers)
                    ]
                )
            finally:
                del token_ref
            attempt.pids = {
                rank: where["trial_pid"]
                for rank, where in enumerate(started)
                if "trial_pid" in where
            }
            nodes = ", ".join(
                f"rank {rank}: {place['node_id']} ({place['ip']})"
                for rank, place in enumerate(places)
            )
            self._ship(
                trial_id,
                [
                    (
                        "master",
                        f"[master] the trial runs as {len(workers)} workers on the Ray nodes "
                        f"{nodes}; rank 0 is the chief",
                        None,
                    )
                ],
            )
            code = self._follow_gang(attempt, workers, places)
        except Exception as err:
            code = _SIGKILL
            if not attempt.killed:
                self._ship(trial_id, [("master", f"[master] {self._loss(attempt, err)}", None)])
                self._causes[trial_id] = self._cause(attempt, err)
        finally:
            for worker in attempt.workers:
                with contextlib.suppress(Exception):
                    ray.kill(worker, no_restart=True)
            with contextlib.suppress(Exception):
                remove_placement_group(attempt.group)
            for rank in attempt.pids:
                attempt.codes.setdefault(rank, _SIGKILL)
            self._ended(attempt)
            self._on_exit(trial_id, _SIGKILL if code is None else code)

    def _follow_gang(
        self, attempt: _Attempt, workers: list[Any], places: list[dict[str, Any]]
    ) -> int:
        """Pull every worker's output until all ended; the attempt's exit status: the first
        failing worker's (the others are then killed), else the chief's (the others get
        :data:`~pedl.exec._gang.STOP_GRACE_SECONDS` after the chief exited 0)."""
        import ray

        from pedl.exec import STOP_GRACE_SECONDS, describe_status

        trial_id = attempt.trial_id
        codes = attempt.codes
        pulls = {worker.pull.remote(_PULL_SECONDS): rank for rank, worker in enumerate(workers)}
        failure: tuple[int, int] | None = None
        chief_done: float | None = None
        stopped = False

        def stop_rest(why: str) -> None:
            nonlocal stopped
            stopped = True
            rest = [rank for rank in range(len(workers)) if rank not in codes]
            self._ship(
                trial_id,
                [
                    (
                        "master",
                        f"[master] {why}; stopping the other workers (ranks "
                        f"{', '.join(map(str, rest))})",
                        None,
                    )
                ]
                if rest
                else [],
            )
            for rank in rest:
                workers[rank].kill.remote()

        while pulls:
            done, _ = ray.wait(list(pulls), num_returns=1, timeout=1.0)
            for ref in done:
                rank = pulls.pop(ref)
                try:
                    lines, code, age = ray.get(ref)
                    if age is not None:
                        attempt.beats[rank] = (age, time.monotonic())
                except ray.exceptions.RayError as err:
                    lines, code = [], _SIGKILL
                    lost = _Attempt(trial_id, None, where=places[rank])
                    lines = [("master", f"[master] rank {rank}: {self._loss(lost, err)}", None)]
                    self._causes[trial_id] = f"rank {rank}: {self._cause(lost, err)}"
                if lines:
                    self._ship(trial_id, lines)
                if code is None:
                    pulls[workers[rank].pull.remote(_PULL_SECONDS)] = rank
                    continue
                codes[rank] = code
                if stopped or attempt.killed:
                    continue
                if code != 0:
                    failure = (rank, code)
                    stop_rest(f"the attempt ended: rank {rank} failed ({describe_status(code)})")
                elif rank == 0:
                    chief_done = time.monotonic()
            if (
                chief_done is not None
                and not stopped
                and time.monotonic() - chief_done >= STOP_GRACE_SECONDS
                and len(codes) < len(workers)
            ):
                stop_rest(f"the chief exited {STOP_GRACE_SECONDS:g} s ago")
        if attempt.killed:
            return _SIGKILL
        if failure is not None:
            return failure[1]
        return codes.get(0, _SIGKILL)

    def _ended(self, attempt: _Attempt) -> None:
        """Forget the attempt, keeping its workers' last states (bounded)."""
        with self._lock:
            self._attempts.pop(attempt.trial_id, None)
            self._last_workers.pop(attempt.trial_id, None)
            self._last_workers[attempt.trial_id] = attempt.states()
            while len(self._last_workers) > _LAST_WORKERS_KEPT:
                del self._last_workers[next(iter(self._last_workers))]

    def workers(self, trial_id: int) -> list[WorkerState]:
        """The worker processes of the trial's running attempt (one, rank 0, for a
        one-process trial), else of its latest attempt; [] if none. Their pids are on their
        Ray nodes."""
        with self._lock:
            attempt = self._attempts.get(trial_id)
            if attempt is None:
                return list(self._last_workers.get(trial_id, []))
            return attempt.states()

    def running(self) -> set[int]:
        with self._lock:
            return set(self._attempts)

    def shutdown(self) -> None:
        import ray

        self._closed.set()
        for trial_id in self.running():
            self.kill(trial_id)
        for watcher in list(self._watchers):
            watcher.join(timeout=30)
        self._monitor.join(timeout=5)
        with contextlib.suppress(Exception):
            ray.shutdown()
