"""What ``bench/p6_ui.py`` reads of processes from Linux's ``/proc``: the page's renderer main
thread's CPU and runqueue wait (schedstat), and the master's resident memory with every
process below it. Real processes: this one and children it starts."""

from __future__ import annotations

import os
import subprocess
import sys
import time
from pathlib import Path

import psutil
import pytest

sys.path.insert(0, str(Path(__file__).parents[2] / "bench"))
p6_ui = pytest.importorskip("p6_ui")

NO_SUCH_PID = 2**22 + 1
"""Above Linux's largest pid (``pid_max`` is at most 2**22)."""


def test_schedstat_is_the_busiest_main_thread_among_the_pids() -> None:
    # This process's main thread (the test's) has run at least the CPU time it burns here; a
    # Python that has just started and sleeps, far less; a pid that does not exist is skipped.
    started = time.thread_time()
    while time.thread_time() - started < 0.3:
        pass
    sleeper = subprocess.Popen([sys.executable, "-c", "import time; time.sleep(60)"])
    try:
        its = p6_ui.main_thread_schedstat({sleeper.pid})
        busiest = p6_ui.main_thread_schedstat({sleeper.pid, os.getpid(), NO_SUCH_PID})
    finally:
        sleeper.kill()
        sleeper.wait()
    assert its["main_runqueue_ms"] is not None and busiest["main_runqueue_ms"] is not None
    assert its["main_cpu_ms"] < 300 <= busiest["main_cpu_ms"]
    assert p6_ui.main_thread_schedstat({NO_SUCH_PID}) == dict.fromkeys(p6_ui.SCHEDSTAT)


def test_resident_memory_sums_the_process_and_every_process_below_it() -> None:
    # A child that holds 200 MB and a grandchild it starts that holds 100 MB; each says
    # "held" once its pages are touched, and then sleeps: their memory no longer changes.
    hold = "import time; b = b'x' * ({mb} * 2**20); print('held', flush=True); time.sleep(60)"
    child = subprocess.Popen(
        [sys.executable, "-c", f"import subprocess, sys; subprocess.Popen([sys.executable, "
         f"'-c', {hold.format(mb=100)!r}]); " + hold.format(mb=200)],
        stdout=subprocess.PIPE, text=True,
    )  # fmt: skip
    try:
        root = psutil.Process(child.pid)
        assert child.stdout is not None
        assert [child.stdout.readline(), child.stdout.readline()] == ["held\n", "held\n"]
        ours = p6_ui.MemoryPeak(child.pid).now_mb()
        psutils = sum(p.memory_info().rss for p in [root, *root.children(recursive=True)])
        assert ours >= 300
        assert abs(ours - psutils / 2**20) < 2  # the same pages, read a moment apart
        assert p6_ui.MemoryPeak(NO_SUCH_PID).now_mb() == 0
    finally:
        for process in psutil.Process(child.pid).children(recursive=True):
            process.kill()
        child.kill()
        child.communicate()
