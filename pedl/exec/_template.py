"""A warm-worker template: a process set up as a warm worker is before its first trial (PEDL
and the framework imported, see :func:`pedl.exec.run_worker`) that forks warm workers on the
resource manager's request, each in a few milliseconds instead of the framework's import
(seconds).

Protocol, over a ``socketpair(AF_UNIX, SOCK_SEQPACKET)`` whose template end is the file
descriptor given on the command line (``python -m pedl.exec.template FD``); one JSON object
per message:

- once set up, the template sends ``{"ready": PID}``;
- the resource manager sends ``{"env": {...}}`` (the worker's whole environment) with four file
  descriptors: the worker's end of its control socket (:mod:`pedl.exec._worker`), the write
  ends of its stdout and stderr pipes, and the template's end of a status socket;
- the template forks; the child starts a session of its own, dies with the template
  (``PR_SET_PDEATHSIG``, as the template dies with the master), points file descriptors 1 and
  2 at the pipes, takes the environment, seeds NumPy's global generator afresh (Python's
  ``random`` does so by itself) and serves trials (:func:`pedl.exec.serve_trials`); the
  template answers ``{"pid": PID}`` (or ``{"error": "..."}``);
- when a worker exits, the template reaps it and sends ``{"returncode": N}`` (as
  :class:`subprocess.Popen` gives it: negative for a signal) on its status socket, then closes
  it;
- an empty message or a closed socket makes the template exit once its workers have.

Forking is safe here because the template runs no thread of its own (the master's death is
checked every 2 s by the loop, not by a watchdog thread) and has run no framework operation:
TensorFlow starts its thread pools on the first one, in the worker. The native threads that
the import leaves (OpenBLAS's pool) are shut down around ``fork`` by OpenBLAS itself. A
forked worker's weights are bit for bit a fresh process's (tests/master/test_worker_template.py).
"""

from __future__ import annotations

import contextlib
import gc
import json
import os
import select
import signal
import socket
import sys
import tempfile
import traceback
from pathlib import Path
from typing import Any

from pedl.exec._exit_codes import EXIT_ERROR, EXIT_MASTER_GONE, EXIT_OK
from pedl.exec._private import make_undumpable, name_process
from pedl.exec._trial_process import configure_logging, die_with_master
from pedl.exec._worker import flush_output, preload, serve_trials

MAX_MESSAGE = 1 << 20
_CHECK_SECONDS = 2.0
_WORKER_PATH = str(Path(__file__).with_name("worker.py"))


def run_template(control_fd: int) -> int:
    """Set up as a warm worker does, then fork workers on request over ``control_fd`` (see the
    module docstring) until the socket closes and the workers are gone; returns the exit
    status."""
    make_undumpable()
    master_pid = int(os.environ.get("PEDL_MASTER_PID") or os.getppid())
    die_with_master(master_pid, watch=False)
    configure_logging()
    preload()
    gc.freeze()
    name_process(b"pedl-template")
    return _Template(socket.socket(fileno=control_fd), master_pid).serve()


class _Template:
    """The template's loop: requests on the control socket, children's exits (``SIGCHLD``
    through a wake-up pipe); one thread."""

    def __init__(self, control: socket.socket, master_pid: int) -> None:
        self._control = control
        self._master_pid = master_pid
        self._children: dict[int, socket.socket] = {}
        """Each live worker's status socket, by pid."""
        self._wake_read, self._wake_write = os.pipe()
        self._pid = os.getpid()

    def serve(self) -> int:
        for fd in (self._wake_read, self._wake_write):
            os.set_blocking(fd, False)
        signal.set_wakeup_fd(self._wake_write)
        signal.signal(signal.SIGCHLD, lambda *_: None)
        self._send({"ready": os.getpid()})
        open_ = True
        while open_ or self._children:
            watched = [self._wake_read, self._control.fileno()] if open_ else [self._wake_read]
            readable, _, _ = select.select(watched, [], [], _CHECK_SECONDS)
            if os.getppid() != self._master_pid:  # PR_SET_PDEATHSIG's fallback
                self._kill_children()
                return EXIT_MASTER_GONE
            if self._wake_read in readable:
                with contextlib.suppress(BlockingIOError):
                    os.read(self._wake_read, 4096)
            self._reap()
            if open_ and self._control.fileno() in readable:
                open_ = self._take_request()
        return EXIT_OK

    def _take_request(self) -> bool:
        """Serve one request; whether the control socket is still open."""
        try:
            data, fds, _, _ = socket.recv_fds(self._control, MAX_MESSAGE, 4)
        except OSError:
            return False
        if not data:
            for fd in fds:
                os.close(fd)
            return False
        try:
            request = json.loads(data)
            env = {str(k): str(v) for k, v in request["env"].items()}
            if len(fds) != 4:
                raise ValueError(f"a request came with {len(fds)} file descriptors, not 4")
        except (ValueError, KeyError, AttributeError, TypeError) as err:
            for fd in fds:
                os.close(fd)
            self._send({"error": f"a bad request: {err}"})
            return True
        control, out, err_, status = fds
        flush_output()
        try:
            pid = os.fork()
        except OSError as error:
            for fd in fds:
                os.close(fd)
            self._send({"error": f"fork failed: {error}"})
            return True
        if pid == 0:
            self._become_worker(env, control, (out, err_), status)
        for fd in (control, out, err_):
            os.close(fd)
        self._children[pid] = socket.socket(fileno=status)
        self._send({"pid": pid})
        return True

    def _become_worker(
        self, env: dict[str, str], control: int, output: tuple[int, int], status: int
    ) -> None:
        """In the forked child: become the worker (see the module docstring); never returns."""
        code = EXIT_ERROR
        try:
            os.setsid()
            die_with_master(self._pid, watch=False)  # its master: the template
            signal.set_wakeup_fd(-1)
            signal.signal(signal.SIGCHLD, signal.SIG_DFL)
            for sock in (self._control, *self._children.values()):
                sock.close()
            for fd in (self._wake_read, self._wake_write, status):
                os.close(fd)
            os.dup2(output[0], 1)
            os.dup2(output[1], 2)
            os.close(output[0])
            os.close(output[1])
            os.environ.clear()
            os.environ.update(env)
            tempfile.tempdir = None
            sys.argv[:] = [_WORKER_PATH, str(control)]  # as ``python -m pedl.exec.worker``'s
            _reseed_numpy()
            name_process(b"pedl-worker")
            code = serve_trials(control)
        except SystemExit as exit_:
            code = exit_.code if isinstance(exit_.code, int) else EXIT_ERROR
        except BaseException:
            traceback.print_exc()
        finally:
            flush_output()
            os._exit(code)

    def _reap(self) -> None:
        while self._children:
            try:
                pid, wait_status = os.waitpid(-1, os.WNOHANG)
            except ChildProcessError:
                return
            if pid == 0:
                return
            status = self._children.pop(pid, None)
            if status is None:
                continue
            with contextlib.suppress(OSError):
                status.send(
                    json.dumps({"returncode": os.waitstatus_to_exitcode(wait_status)}).encode()
                )
            status.close()

    def _kill_children(self) -> None:
        for pid in self._children:
            with contextlib.suppress(OSError):
                os.killpg(pid, signal.SIGKILL)

    def _send(self, message: dict[str, Any]) -> None:
        with contextlib.suppress(OSError):
            self._control.send(json.dumps(message).encode())


def _reseed_numpy() -> None:
    """Seed NumPy's global generator from the system's entropy, as a fresh process's is (every
    child of the template would otherwise draw the same numbers)."""
    numpy: Any = sys.modules.get("numpy")
    if numpy is not None:
        numpy.random.seed()
