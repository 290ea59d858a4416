"""Warm workers, the resource manager's side: processes that imported the framework once and
run the trials of one experiment one after another (the worker's side, and the protocol, are
in :mod:`pedl.exec._worker`); and spare workers, started before any trial needs them, each of
which becomes the worker of the first experiment whose trial it serves."""

from __future__ import annotations

import contextlib
import json
import os
import signal
import socket
import subprocess
import time
from collections import deque
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import IO, Protocol

from pedl.master.rm._base import IdleWorker, WorkerExit
from pedl.master.rm._controlled import start_controlled
from pedl.master.rm._isolation import private_variables, remove_dir, worker_dir
from pedl.master.rm._template import WorkerTemplate
from pedl.master.rm._trial_user import TrialUser

WORKER_MODULE = "pedl.exec.worker"
KEPT_EXITS = 20
"""How many unexpected exits of idle workers a :class:`WarmPool` remembers."""
_MAX_MESSAGE = 1 << 16


class WorkerProcess(Protocol):
    """What the resource manager uses of a worker's process: a :class:`subprocess.Popen`, or a
    :class:`~pedl.master.rm._template.ForkedProcess` for one forked by the template."""

    @property
    def pid(self) -> int: ...

    @property
    def returncode(self) -> int | None: ...

    @property
    def stdout(self) -> IO[bytes] | None: ...

    @property
    def stderr(self) -> IO[bytes] | None: ...

    def poll(self) -> int | None: ...

    def wait(self, timeout: float | None = None) -> int: ...


class WarmWorker:
    """One worker process (in its own process group) and its control socket.

    Its temporary files go to ``tmpdir``, a private directory (0700) that holds its trials'
    directories too, and is removed once the process is gone.

    It serves only trials of ``experiment_id`` whose environment (without the trial's own
    variables) is ``env`` on the same number of GPUs, ``gpus``, which it holds while idle (its
    TensorFlow keeps their memory). A spare (``experiment_id`` None: it has run no trial, so it
    is what a new process started with ``env`` would be) is claimed by the first experiment
    whose trial it serves. Not thread-safe: the resource manager serialises the calls
    (:meth:`assign` from its starting thread, :meth:`wait` from the trial's watcher).
    """

    def __init__(
        self,
        popen: WorkerProcess,
        control: socket.socket,
        *,
        env: Mapping[str, str],
        gpus: Sequence[str],
        experiment_id: int | None,
        tmpdir: Path | None = None,
    ) -> None:
        self.popen = popen
        self.tmpdir = tmpdir
        self.env = dict(env)
        self.gpus = list(gpus)
        self.experiment_id = experiment_id
        self.trials = 0
        """Trials handed to this worker so far."""
        self.trial_id: int | None = None
        """The trial handed last."""
        self.idle_since = 0.0
        self._control = control

    @classmethod
    def spawn(
        cls,
        python: str,
        env: Mapping[str, str],
        *,
        gpus: Sequence[str],
        experiment_id: int | None,
        user: TrialUser | None = None,
    ) -> WarmWorker:
        """Start ``python -m pedl.exec.worker`` with ``env`` (plus ``CUDA_VISIBLE_DEVICES`` for
        ``gpus``, if any, and ``TMPDIR``: a new private directory), as the trial ``user`` if
        one is given (then with its ``HOME`` in that directory); its own output (outside
        trials) is on ``popen.stdout/stderr``."""
        child_env = dict(env)
        if gpus:
            child_env["CUDA_VISIBLE_DEVICES"] = ",".join(gpus)
        popen, ours, tmpdir = start_controlled(python, WORKER_MODULE, child_env, user=user)
        return cls(popen, ours, env=env, gpus=gpus, experiment_id=experiment_id, tmpdir=tmpdir)

    @classmethod
    def fork(
        cls, template: WorkerTemplate, env: Mapping[str, str], *, experiment_id: int | None
    ) -> WarmWorker:
        """Fork a worker with ``env`` (and ``TMPDIR``: a new private directory) from
        ``template`` (which :meth:`~WorkerTemplate.serves` it): what :meth:`spawn` would start,
        without the framework's import. Raises ``OSError`` if the template cannot."""
        tmpdir = worker_dir()
        try:
            control, process = template.fork({**env, **private_variables(tmpdir, None)})
        except OSError:
            remove_dir(tmpdir)
            raise
        return cls(process, control, env=env, gpus=[], experiment_id=experiment_id, tmpdir=tmpdir)

    @property
    def pid(self) -> int:
        return self.popen.pid

    @property
    def spare(self) -> bool:
        """Whether no experiment has claimed the worker yet (it has run no trial)."""
        return self.experiment_id is None

    def serves(self, experiment_id: int, env: Mapping[str, str], gpu_count: int) -> bool:
        """Whether this worker may run a trial of ``experiment_id`` started with ``env`` on
        ``gpu_count`` GPUs: it is that experiment's, or a spare, with that environment."""
        return (
            self.experiment_id in (experiment_id, None)
            and len(self.gpus) == gpu_count
            and self.env == env
            and self.popen.poll() is None
        )

    def assign(
        self, trial_id: int, token: str, variables: Mapping[str, str]
    ) -> tuple[IO[bytes], IO[bytes]]:
        """Hand the worker a trial (its ``token``, which the worker keeps out of its
        environment, and ``variables``: its own environment variables); return the read ends
        of the trial's stdout and stderr. Raises ``OSError`` if the worker is gone."""
        out_read, out_write = os.pipe()
        err_read, err_write = os.pipe()
        message = json.dumps(
            {"trial_id": trial_id, "token": token, "env": dict(variables)}
        ).encode()
        try:
            socket.send_fds(self._control, [message], [out_write, err_write])
        except OSError:
            os.close(out_read)
            os.close(err_read)
            raise
        finally:
            os.close(out_write)
            os.close(err_write)
        self.trials += 1
        self.trial_id = trial_id
        return os.fdopen(out_read, "rb"), os.fdopen(err_read, "rb")

    def wait(self) -> tuple[int, bool]:
        """Block until the trial handed last has ended: its exit status, and whether the
        worker is ready for another trial (else it has exited)."""
        try:
            data = self._control.recv(_MAX_MESSAGE)
        except OSError:
            data = b""
        if data:
            reply = json.loads(data)
            if reply.get("trial_id") == self.trial_id:
                return int(reply["returncode"]), True
            self.kill()  # it answered for another trial: not to be trusted with a next one
        self._control.close()
        returncode = self.popen.wait()
        remove_dir(self.tmpdir)
        return returncode, False

    def kill(self) -> None:
        """SIGKILL the worker's process group (no-op if it is gone); :meth:`wait` then
        reports the signal."""
        with contextlib.suppress(ProcessLookupError, PermissionError):
            os.killpg(self.popen.pid, signal.SIGKILL)

    def retire(self, timeout: float = 30.0) -> None:
        """Kill an idle worker and wait until it is gone (its GPUs are free then)."""
        self.kill()
        self._control.close()
        with contextlib.suppress(subprocess.TimeoutExpired):
            self.popen.wait(timeout)
        remove_dir(self.tmpdir)


class WarmPool:
    """The idle warm workers of a resource manager (the caller holds its lock), and the
    latest :data:`KEPT_EXITS` of them that exited by themselves (:meth:`exits`)."""

    def __init__(self) -> None:
        self._idle: list[WarmWorker] = []
        self._exits: deque[WorkerExit] = deque(maxlen=KEPT_EXITS)
        self._exit_count = 0

    def __len__(self) -> int:
        return len(self._idle)

    def put(self, worker: WarmWorker) -> None:
        """``worker`` finished a trial and is ready for another."""
        worker.idle_since = time.monotonic()
        self._idle.append(worker)

    def take(self, experiment_id: int, env: Mapping[str, str], gpu_count: int) -> WarmWorker | None:
        """Remove and return the most recently used idle worker of the experiment that serves
        the trial, else a spare that does (now the experiment's), if any."""
        serving = [w for w in self._idle if w.serves(experiment_id, env, gpu_count)]
        if not serving:
            return None
        worker = next((w for w in reversed(serving) if not w.spare), serving[0])
        self._idle.remove(worker)
        worker.experiment_id = experiment_id
        return worker

    def spares(self) -> int:
        """How many idle workers are spares."""
        return sum(1 for w in self._idle if w.spare)

    def oldest(self) -> WarmWorker | None:
        """Remove and return the idle worker idle the longest, if any."""
        return self._idle.pop(0) if self._idle else None

    def idle_longer_than(self, seconds: float) -> list[WarmWorker]:
        """Remove and return the workers (spares aside) idle for more than ``seconds``, and
        every worker that is gone (an exit of its own: remembered, see :meth:`exits`)."""
        now = time.monotonic()
        stale = [
            w
            for w in self._idle
            if (now - w.idle_since > seconds and not w.spare) or w.popen.poll() is not None
        ]
        self._idle = [w for w in self._idle if w not in stale]
        for worker in stale:
            returncode = worker.popen.poll()
            if returncode is not None:
                self._exit_count += 1
                self._exits.append(
                    WorkerExit(
                        number=self._exit_count,
                        pid=worker.pid,
                        returncode=returncode,
                        spare=worker.spare,
                        experiment_id=worker.experiment_id,
                        trial_id=worker.trial_id,
                        at=time.time(),
                    )
                )
        return stale

    def idle(self) -> list[IdleWorker]:
        """The idle workers, longest idle first."""
        now, wall = time.monotonic(), time.time()
        return [
            IdleWorker(
                pid=w.pid,
                spare=w.spare,
                experiment_id=w.experiment_id,
                trial_id=w.trial_id,
                since=wall - (now - w.idle_since),
            )
            for w in sorted(self._idle, key=lambda w: w.idle_since)
        ]

    def exits(self) -> list[WorkerExit]:
        """The latest idle workers that exited by themselves, oldest first."""
        return list(self._exits)

    def workers(self) -> list[WarmWorker]:
        """The idle workers (they stay in the pool)."""
        return list(self._idle)

    def take_all(self) -> list[WarmWorker]:
        idle, self._idle = self._idle, []
        return idle

    def gpus(self) -> list[str]:
        """The GPUs the idle workers hold."""
        return [gpu for worker in self._idle for gpu in worker.gpus]
