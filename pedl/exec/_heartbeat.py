"""The worker's heartbeat: one byte about every second on the pipe the launcher gave.

A multi-worker trial's launcher passes the write end of a pipe as ``PEDL_HEARTBEAT_FD``
(see the contract of issue 20). A daemon thread writes one byte to it about every second,
so a worker that is stopped (SIGSTOP) or whose process hangs as a whole stops beating and
the launcher, after ``worker_heartbeat_timeout`` seconds without a byte, treats it as hung.
"""

from __future__ import annotations

import os
import threading
from collections.abc import MutableMapping

ENV_HEARTBEAT_FD = "PEDL_HEARTBEAT_FD"
HEARTBEAT_SECONDS = 1.0


def start_heartbeat(
    environ: MutableMapping[str, str] | None = None, *, interval: float = HEARTBEAT_SECONDS
) -> threading.Thread | None:
    """Start the heartbeat thread on the fd ``PEDL_HEARTBEAT_FD`` names; return it, or None
    when the variable is unset (a single-worker trial, a trial run by hand).

    The thread ends by itself when the pipe is closed by the launcher (a write fails). The
    variable is removed from the environment, so that the model code's subprocesses do not
    inherit the duty (the fd itself is not inheritable by them).
    """
    env: MutableMapping[str, str] = os.environ if environ is None else environ
    raw = env.pop(ENV_HEARTBEAT_FD, None)
    if not raw:
        return None
    fd = int(raw)
    os.set_inheritable(fd, False)

    def beat() -> None:
        stop = threading.Event()
        while True:
            try:
                os.write(fd, b"\x01")
            except OSError:
                return  # the launcher closed its end: nobody listens any more
            stop.wait(interval)

    thread = threading.Thread(target=beat, name="pedl-heartbeat", daemon=True)
    thread.start()
    return thread
