"""The master's read processes: child processes serving the API's database reads.

See :mod:`pedl.master.api._forward` for why and for what they serve. Each is
``python -m pedl.master._read_main SOCKET``, given the master's settings as one JSON line on
its standard input, which stays open: the process exits when it reads end-of-file, i.e. when
the master stops it or dies (even by SIGKILL). Its Unix socket lives in a private temporary
directory (mode 0700, ``pedl-reads-<master pid>-*``, see :mod:`pedl.master._temp_dirs`) that
the master removes when it stops them, or the next master to start when this one was killed.
"""

from __future__ import annotations

import asyncio
import logging
import shutil
import subprocess
import sys
import time
from contextlib import suppress
from dataclasses import dataclass
from pathlib import Path

import anyio.to_thread

from pedl.master._settings import MasterSettings
from pedl.master._temp_dirs import master_temp_dir

logger = logging.getLogger("pedl.master")

CHECK_INTERVAL_S = 1.0
"""How often the master checks that its read processes still run."""
RESTART_DELAY_S = 5.0
"""A read process that exits is started again, at most once per this many seconds."""
READY_TIMEOUT_S = 60.0
"""How long the master's startup waits for its read processes to serve."""
STOP_TIMEOUT_S = 15.0
"""How long a stopping read process may take to finish its requests before it is killed."""


@dataclass
class _Child:
    socket: str
    process: subprocess.Popen[bytes] | None = None
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
        self._children: list[_Child] = []
        self._running: list[str] = []
        self._watch: asyncio.Task[None] | None = None

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
        child.process = subprocess.Popen(
            [sys.executable, "-m", "pedl.master._read_main", child.socket],
            stdin=subprocess.PIPE,
            # Its own session: a Ctrl-C in the master's terminal does not reach it; it exits
            # when the master closes its standard input (or dies).
            start_new_session=True,
        )
        child.started_at = time.monotonic()
        assert child.process.stdin is not None
        child.process.stdin.write(self.settings.model_dump_json().encode() + b"\n")
        child.process.stdin.flush()
        logger.info("read process %d serving on %s", child.process.pid, child.socket)

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
        for child in self._children:
            if child.process is not None and child.process.stdin is not None:
                with suppress(OSError):
                    child.process.stdin.close()  # end-of-file: the process stops
        deadline = time.monotonic() + STOP_TIMEOUT_S
        for child in self._children:
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
