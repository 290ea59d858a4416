"""A multi-worker trial's worker beats on PEDL_HEARTBEAT_FD; a stopped one falls silent."""

from __future__ import annotations

import os
import select
import signal
import subprocess
import sys
import time

from pedl import core
from pedl.exec import start_heartbeat, trial_distributed_context


def bytes_within(fd: int, seconds: float) -> int:
    count = 0
    deadline = time.monotonic() + seconds
    while (left := deadline - time.monotonic()) > 0:
        ready, _, _ = select.select([fd], [], [], left)
        if ready:
            count += len(os.read(fd, 100))
    return count


def test_a_worker_beats_about_every_second_and_falls_silent_when_stopped() -> None:
    read_end, write_end = os.pipe()
    code = (
        "import os, time; from pedl.exec import start_heartbeat; "
        "assert start_heartbeat() is not None; "
        "assert 'PEDL_HEARTBEAT_FD' not in os.environ; time.sleep(30)"
    )
    proc = subprocess.Popen(
        [sys.executable, "-c", code],
        env={**os.environ, "PEDL_HEARTBEAT_FD": str(write_end)},
        pass_fds=(write_end,),
    )
    os.close(write_end)
    try:
        assert bytes_within(read_end, 10) >= 1  # started (imports) and beat
        assert bytes_within(read_end, 2.5) >= 2
        proc.send_signal(signal.SIGSTOP)
        bytes_within(read_end, 0.2)  # a byte written just before the stop
        assert bytes_within(read_end, 2.5) == 0
        proc.send_signal(signal.SIGCONT)
        assert bytes_within(read_end, 2.5) >= 1
    finally:
        proc.kill()
        proc.wait()
        os.close(read_end)


def test_no_heartbeat_without_the_variable() -> None:
    assert start_heartbeat({}) is None


def test_the_trial_process_builds_its_distributed_context_from_the_launchers_variables() -> None:
    env = core.DistributedContext(rank=1, size=2, local_rank=1, local_size=2).to_env()
    distributed = trial_distributed_context(env)
    assert (distributed.rank, distributed.size, distributed.is_chief) == (1, 2, False)
    single = trial_distributed_context({})
    assert (single.rank, single.size) == (0, 1)
