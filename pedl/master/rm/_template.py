"""The warm-worker template, the resource manager's side: one process that imported the
framework once and forks warm workers in milliseconds (the template's side, and the protocol,
are in :mod:`pedl.exec._template`), and :class:`ForkedProcess`, what the resource manager
holds of a worker forked by it in place of a :class:`subprocess.Popen`."""

from __future__ import annotations

import contextlib
import json
import os
import signal
import socket
import subprocess
import threading
import time
from collections.abc import Mapping
from pathlib import Path
from typing import IO

from pedl.exec import describe_status
from pedl.master.rm._controlled import start_controlled
from pedl.master.rm._isolation import remove_dir

TEMPLATE_MODULE = "pedl.exec.template"
FORK_TIMEOUT_S = 10.0
"""How long a fork may take the template before the resource manager gives up on it (it
answers in milliseconds; a template that does not is broken, or stopped)."""
READY_TIMEOUT_S = 120.0
"""How long a trial waits for a template that is still importing the framework (seconds on an
idle machine) before it gets a process of its own, and the template is used no more."""
_MAX_MESSAGE = 1 << 16


class ForkedProcess:
    """A warm worker forked by a :class:`WorkerTemplate`: what the resource manager uses of a
    :class:`subprocess.Popen` (``pid``, ``returncode``, ``stdout``, ``stderr``, :meth:`poll`,
    :meth:`wait`). The worker is the template's child: the template sends its exit status
    on ``status``; a status socket that closes without one means the template died, and
    the worker with it (``PR_SET_PDEATHSIG``): it is reported as killed (``-SIGKILL``)."""

    def __init__(self, pid: int, status: socket.socket, stdout: IO[bytes], stderr: IO[bytes]):
        self.pid = pid
        self.stdout: IO[bytes] | None = stdout
        self.stderr: IO[bytes] | None = stderr
        self.returncode: int | None = None
        self._status = status
        self._lock = threading.Lock()

    def poll(self) -> int | None:
        """The exit status if the worker has exited, else None (at once)."""
        if not self._lock.acquire(blocking=False):  # a wait() is under way
            return self.returncode
        try:
            return self._read(0.0)
        finally:
            self._lock.release()

    def wait(self, timeout: float | None = None) -> int:
        """Block until the worker has exited (at most ``timeout`` seconds, then
        :class:`subprocess.TimeoutExpired`); its exit status."""
        with self._lock:
            code = self._read(timeout)
        if code is None:
            raise subprocess.TimeoutExpired(f"warm worker {self.pid}", timeout or 0.0)
        return code

    def _read(self, timeout: float | None) -> int | None:
        if self.returncode is not None:
            return self.returncode
        self._status.settimeout(timeout)
        try:
            data = self._status.recv(_MAX_MESSAGE)
        except (BlockingIOError, TimeoutError):
            return None
        except OSError:
            data = b""
        self._status.close()
        code = None
        with contextlib.suppress(ValueError, KeyError, TypeError):
            code = int(json.loads(data)["returncode"])
        if code is None:  # the template is gone: so is the worker, or it is going
            with contextlib.suppress(ProcessLookupError, PermissionError):
                os.killpg(self.pid, signal.SIGKILL)
            code = -signal.SIGKILL
        self.returncode = code
        return code


class WorkerTemplate:
    """A template process (in its own process group) and its control socket.

    It forks workers for the environment it was started with, ``env`` (a worker's own
    ``TMPDIR`` aside, which each fork gets), with ``python``: :meth:`serves` says whether it can
    serve a new worker. Its own temporary files go to a private directory, removed once it is
    gone. :meth:`ready` and :meth:`fork` take the template's own lock, so that no call reads
    another's answer (the resource manager waits for it to get ready without its own lock)."""

    def __init__(
        self,
        popen: subprocess.Popen[bytes],
        control: socket.socket,
        *,
        env: Mapping[str, str],
        python: str,
        tmpdir: Path,
    ) -> None:
        self.popen = popen
        self.env = dict(env)
        self.python = python
        self._control = control
        self._tmpdir = tmpdir
        self._ready = False
        self._broken = False
        self._lock = threading.Lock()
        self._started = time.monotonic()

    @classmethod
    def spawn(cls, python: str, env: Mapping[str, str]) -> WorkerTemplate:
        """Start ``python -m pedl.exec.template`` with ``env`` (and a private ``TMPDIR``); its
        output is on ``popen.stdout/stderr``. It dies with the thread that starts it
        (``PR_SET_PDEATHSIG``): start it from one that lives as long as the resource manager."""
        popen, ours, tmpdir = start_controlled(python, TEMPLATE_MODULE, env)
        return cls(popen, ours, env=env, python=python, tmpdir=tmpdir)

    @property
    def pid(self) -> int:
        return self.popen.pid

    @property
    def ever_ready(self) -> bool:
        """Whether it ever got ready, and so may have forked workers (which die with it)."""
        return self._ready

    @property
    def failed(self) -> bool:
        """Whether the template can fork no more workers (:attr:`failure` says why)."""
        return self.failure is not None

    @property
    def failure(self) -> str | None:
        """Why the template can fork no more workers, in words; None while it can."""
        code = self.popen.poll()
        if code is not None:
            return f"it exited ({describe_status(code)})"
        return "it did not answer as a template does" if self._broken else None

    def ready(self, timeout: float = 0.0) -> bool:
        """Whether it has set itself up and forks, waiting at most ``timeout`` seconds for it
        to say so (it does once); one that does not within a ``timeout`` given, or within
        :data:`READY_TIMEOUT_S` of its start, is broken.
        While another call waits for it, a call without ``timeout`` answers False at once, and
        one with waits its turn within ``timeout``."""
        if self._ready:
            return not self.failed
        if not self._lock.acquire(timeout=timeout if timeout > 0 else 0):
            return False
        try:
            if not self._ready and not self.failed:
                self._control.settimeout(timeout)
                try:
                    data = self._control.recv(_MAX_MESSAGE)
                except (BlockingIOError, TimeoutError):
                    overdue = time.monotonic() - self._started > READY_TIMEOUT_S
                    self._broken = timeout > 0 or overdue
                    return False
                except OSError:
                    data = b""
                finally:
                    self._control.settimeout(None)
                self._ready = b'"ready"' in data
                self._broken = not self._ready
            return self._ready and not self.failed
        finally:
            self._lock.release()

    def serves(self, python: str, env: Mapping[str, str], gpu_count: int) -> bool:
        """Whether a new worker for ``env`` run by ``python`` on ``gpu_count`` GPUs can be
        forked from this template (once it is :meth:`ready`)."""
        return gpu_count == 0 and python == self.python and env == self.env and not self.failed

    def fork(self, env: Mapping[str, str]) -> tuple[socket.socket, ForkedProcess]:
        """Fork a worker with the environment ``env``; return the resource manager's end of
        its control socket and the process. Raises ``OSError`` (and the template is
        :attr:`failed`) if it cannot."""
        with self._lock:
            return self._fork(env)

    def _fork(self, env: Mapping[str, str]) -> tuple[socket.socket, ForkedProcess]:
        ours, theirs = socket.socketpair(socket.AF_UNIX, socket.SOCK_SEQPACKET)
        status_ours, status_theirs = socket.socketpair(socket.AF_UNIX, socket.SOCK_SEQPACKET)
        out_read, out_write = os.pipe()
        err_read, err_write = os.pipe()
        reply: dict[str, object] = {}
        try:
            socket.send_fds(
                self._control,
                [json.dumps({"env": dict(env)}).encode()],
                [theirs.fileno(), out_write, err_write, status_theirs.fileno()],
            )
            self._control.settimeout(FORK_TIMEOUT_S)
            try:
                reply = json.loads(self._control.recv(_MAX_MESSAGE) or b"{}")
            finally:
                self._control.settimeout(None)
        except (OSError, ValueError) as err:
            reply = {"error": str(err) or type(err).__name__}
        finally:
            for sock in (theirs, status_theirs):
                sock.close()
            for fd in (out_write, err_write):
                os.close(fd)
        pid = reply.get("pid")
        if not isinstance(pid, int):
            self._broken = True
            for sock in (ours, status_ours):
                sock.close()
            for fd in (out_read, err_read):
                os.close(fd)
            raise OSError(f"the warm worker template {self.pid} forked no worker: {reply}")
        return ours, ForkedProcess(
            pid, status_ours, os.fdopen(out_read, "rb"), os.fdopen(err_read, "rb")
        )

    def retire(self, timeout: float = 30.0) -> None:
        """Kill the template (its workers die with it) and wait until it is gone."""
        self._control.close()
        with contextlib.suppress(ProcessLookupError, PermissionError):
            os.killpg(self.popen.pid, signal.SIGKILL)
        with contextlib.suppress(subprocess.TimeoutExpired):
            self.popen.wait(timeout)
        remove_dir(self._tmpdir)
