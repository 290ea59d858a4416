"""The master's read processes: child processes serving the API's database reads.

See :mod:`pedl.master.api._forward` for why and for what they serve. Each is forked from
the master as it starts (:meth:`ReadProcesses.prefork`: the master's modules are imported
already, so a read process costs no import: ~5 s of CPU each on a small machine, which the
master's start waited for) or, when one is started again later, is ``python -m
pedl.master._read_main SOCKET``, given the master's settings as one JSON line on its standard
input. Either way that input stays open: the process exits when it reads end-of-file, i.e.
when the master stops it or dies (even by SIGKILL). Its Unix socket lives in a private temporary
directory (mode 0700, ``pedl-reads-<master pid>-*``, see :mod:`pedl.master._temp_dirs`) that
the master removes when it stops them, or the next master to start when this one was killed.
"""

from __future__ import annotations

import asyncio
import io
import logging
import os
import shutil
import signal
import subprocess
import sys
import threading
import time
import traceback
from contextlib import suppress
from dataclasses import dataclass
from pathlib import Path
from typing import IO, NoReturn, Protocol

import anyio.to_thread

from pedl.exec import name_process
from pedl.master._settings import MasterSettings
from pedl.master._temp_dirs import master_temp_dir
from pedl.master.rm import protect_master_process

logger = logging.getLogger("pedl.master")

CHECK_INTERVAL_S = 1.0
"""How often the master checks that its read processes still run."""
RESTART_DELAY_S = 5.0
"""A read process that exits is started again, at most once per this many seconds."""
READY_TIMEOUT_S = 60.0
"""How long the master's startup waits for its read processes to serve."""
STOP_TIMEOUT_S = 15.0
"""How long a stopping read process may take to finish its requests before it is killed."""


class _Process(Protocol):
    """What :class:`ReadProcesses` uses of a child process (a :class:`subprocess.Popen`, or a
    :class:`_Forked`)."""

    pid: int
    stdin: IO[bytes] | None
    returncode: int | None

    def poll(self) -> int | None: ...

    def wait(self, timeout: float | None = None) -> int: ...

    def kill(self) -> None: ...


class _Forked:
    """A read process forked by :meth:`ReadProcesses.prefork`, waiting on ``stdin`` for its
    socket's path; :class:`subprocess.Popen`'s calls that :class:`ReadProcesses` makes."""

    def __init__(self, pid: int, stdin: IO[bytes]) -> None:
        self.pid = pid
        self.stdin: IO[bytes] | None = stdin
        self.returncode: int | None = None

    def tell(self, socket_path: str) -> bool:
        """Send the process its socket's path (it then serves there); False if it is gone."""
        if self.poll() is not None or self.stdin is None:
            return False
        try:
            self.stdin.write(socket_path.encode() + b"\n")
            self.stdin.flush()
        except OSError:
            return False
        return True

    def poll(self) -> int | None:
        if self.returncode is None:
            try:
                pid, status = os.waitpid(self.pid, os.WNOHANG)
            except ChildProcessError:  # reaped already: gone
                pid, status = self.pid, 0
            if pid == self.pid:
                self.returncode = os.waitstatus_to_exitcode(status)
        return self.returncode

    def wait(self, timeout: float | None = None) -> int:
        deadline = None if timeout is None else time.monotonic() + timeout
        while (code := self.poll()) is None:
            if deadline is not None and time.monotonic() >= deadline:
                raise subprocess.TimeoutExpired(f"read process {self.pid}", timeout or 0.0)
            time.sleep(0.01)
        return code

    def kill(self) -> None:
        if self.returncode is None:
            with suppress(ProcessLookupError):
                os.kill(self.pid, signal.SIGKILL)


@dataclass
class _Child:
    socket: str
    process: _Process | None = None
    started_at: float = 0.0


class ReadProcesses:
    """``count`` read processes on the database of ``settings``, implementing
    :class:`pedl.master.api._forward.ReadSource` for :func:`~pedl.master.api.create_app`.

    :meth:`start` (on the app's event loop, once the database is migrated) starts them,
    waits until they serve (up to ``ready_timeout_s``), and starts a task that checks on them
    every ``check_interval_s`` and starts again any that exited
    (logging its exit status), at most once per ``restart_delay_s`` each; :meth:`sockets`
    lists the sockets of those running; :meth:`stop` stops them (they finish the requests
    they have, up to :data:`STOP_TIMEOUT_S`) and removes their directory.
    """

    def __init__(
        self,
        settings: MasterSettings,
        count: int,
        *,
        check_interval_s: float = CHECK_INTERVAL_S,
        restart_delay_s: float = RESTART_DELAY_S,
        ready_timeout_s: float = READY_TIMEOUT_S,
    ) -> None:
        self.settings = settings
        self.count = count
        self.check_interval_s = check_interval_s
        self.restart_delay_s = restart_delay_s
        self.ready_timeout_s = ready_timeout_s
        self.restarts = 0
        self._dir: Path | None = None
        self._forked: list[_Forked] = []
        self._children: list[_Child] = []
        self._running: list[str] = []
        self._watch: asyncio.Task[None] | None = None

    def prefork(self) -> None:
        """Fork the read processes now, if this process runs one thread only (the master's
        start, before its database, threads and event loop: nothing held by another thread,
        a native library's included, is copied half-done); each waits for :meth:`start`.
        Without a call, or with other threads running, :meth:`start` starts new Python
        processes instead."""
        if _threads() != 1 or not hasattr(os, "fork"):
            return
        for stream in (sys.stdout, sys.stderr):
            stream.flush()  # what is buffered would be written again by each child
        for _ in range(self.count):
            read_end, write_end = os.pipe()
            pid = os.fork()
            if pid == 0:
                _run_forked(self.settings, read_end)
            os.close(read_end)
            self._forked.append(_Forked(pid, os.fdopen(write_end, "wb")))

    async def start(self) -> None:
        """Start the processes and wait until each serves (at most ``ready_timeout_s``; one
        that is not ready by then is left to come up on its own, its reads served by the
        master meanwhile)."""
        self._dir = master_temp_dir("reads")
        self._children = [_Child(str(self._dir / f"{i}.sock")) for i in range(self.count)]
        for child in self._children:
            await anyio.to_thread.run_sync(self._spawn, child)
        deadline = time.monotonic() + self.ready_timeout_s
        for child in self._children:
            if not await _serving(child, deadline):
                logger.warning("read process on %s is not serving yet", child.socket)
        self._refresh()
        self._watch = asyncio.create_task(self._watch_children(), name="pedl-read-processes")

    def sockets(self) -> list[str]:
        return self._running

    def pids(self) -> list[int]:
        """The process ids of the read processes running now."""
        return [
            child.process.pid
            for child in self._children
            if child.process is not None and child.process.poll() is None
        ]

    async def stop(self) -> None:
        if self._watch is not None:
            self._watch.cancel()
            with suppress(asyncio.CancelledError):
                await self._watch
        self._running = []
        await anyio.to_thread.run_sync(self._stop_all)

    def _spawn(self, child: _Child) -> None:
        if child.process is not None and child.process.stdin is not None:
            with suppress(OSError):
                child.process.stdin.close()  # of the process that exited
        while self._forked:
            forked = self._forked.pop(0)
            if forked.tell(child.socket):
                child.process, child.started_at = forked, time.monotonic()
                logger.info("read process %d serving on %s", forked.pid, child.socket)
                return
        process = subprocess.Popen(
            [sys.executable, "-m", "pedl.master._read_main", child.socket],
            stdin=subprocess.PIPE,
            # Its own session: a Ctrl-C in the master's terminal does not reach it; it exits
            # when the master closes its standard input (or dies).
            start_new_session=True,
        )
        child.process, child.started_at = process, time.monotonic()
        assert process.stdin is not None
        process.stdin.write(self.settings.model_dump_json().encode() + b"\n")
        process.stdin.flush()
        logger.info("read process %d serving on %s", process.pid, child.socket)

    def _refresh(self) -> None:
        self._running = [
            child.socket
            for child in self._children
            if child.process is not None and child.process.poll() is None
        ]

    async def _watch_children(self) -> None:
        while True:
            await asyncio.sleep(self.check_interval_s)
            for child in self._children:
                process = child.process
                if process is None or process.poll() is None:
                    continue
                if time.monotonic() - child.started_at < self.restart_delay_s:
                    continue
                logger.warning(
                    "read process %d exited with status %s; starting another",
                    process.pid,
                    process.returncode,
                )
                self.restarts += 1
                await anyio.to_thread.run_sync(self._spawn, child)
            self._refresh()

    def _stop_all(self) -> None:
        unused, self._forked = self._forked, []
        children = [*self._children, *(_Child("", forked) for forked in unused)]
        for child in children:
            if child.process is not None and child.process.stdin is not None:
                with suppress(OSError):
                    child.process.stdin.close()  # end-of-file: the process stops
        deadline = time.monotonic() + STOP_TIMEOUT_S
        for child in children:
            if child.process is None:
                continue
            try:
                child.process.wait(max(0.0, deadline - time.monotonic()))
            except subprocess.TimeoutExpired:
                logger.warning("read process %d did not stop; killing it", child.process.pid)
                child.process.kill()
                child.process.wait()
        if self._dir is not None:
            shutil.rmtree(self._dir, ignore_errors=True)


async def _serving(child: _Child, deadline: float) -> bool:
    """Wait until ``child`` accepts a connection on its socket (True), exits or the
    deadline passes (False)."""
    while time.monotonic() < deadline:
        if child.process is None or child.process.poll() is not None:
            return False
        try:
            _reader, writer = await asyncio.open_unix_connection(child.socket)
        except OSError:
            await asyncio.sleep(0.05)
            continue
        writer.close()
        await writer.wait_closed()
        return True
    return False


def _run_forked(settings: MasterSettings, read_end: int) -> NoReturn:
    """A forked read process: in its own session (a Ctrl-C in the master's terminal does
    not reach it), with only its standard streams and ``read_end`` (as its standard input:
    the master's other pipes and files are closed), it builds its app while the master
    starts, waits for its socket's path, then serves until end-of-file. Never returns into
    the master's code."""
    code = 0
    try:
        os.setsid()
        os.dup2(read_end, 0)
        os.closerange(3, os.sysconf("SC_OPEN_MAX"))
        # The start environment it shares with the master holds the master's secrets (the
        # master masks its own later): masked here, and the process made non-dumpable.
        protect_master_process()
        name_process(b"pedl-reads")
        from pedl.master._serve import prepare_reads

        serve_on = prepare_reads(settings)
        stdin = open(0, "rb", closefd=False)  # noqa: SIM115 - the process's, for its life
        socket_path = stdin.readline().decode().strip()
        sys.stdin = io.TextIOWrapper(stdin)  # the server waits there for end-of-file
        if socket_path:
            serve_on(socket_path)
    except BaseException:  # a child of a fork must not unwind into the master's code
        traceback.print_exc()
        code = 1
    finally:
        with suppress(BaseException):
            sys.stdout.flush()
            sys.stderr.flush()
        os._exit(code)


def _threads() -> int:
    """This process's threads: the kernel's count (native libraries' threads too) where
    ``/proc`` tells, else Python's."""
    try:
        return len(os.listdir("/proc/self/task"))
    except OSError:
        return threading.active_count()
