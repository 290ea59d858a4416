"""What a test that failed on time shows about its process, for a CI log."""

from __future__ import annotations

import asyncio
import gc
import os
import subprocess
import sys
import threading
import traceback
from pathlib import Path
from types import FrameType


def thread_stacks() -> str:
    """Every Python thread of this process but the test's own (its traceback is above) and
    its innermost frames, one line each, so the section stays short in a CI log."""
    frames = sys._current_frames()
    threads = threading.enumerate()
    parts = [
        f"--- {thread.name} (daemon={thread.daemon}) {_kernel_state(thread.native_id)}"
        + _innermost(frames.get(thread.ident or -1))
        for thread in threads
        if thread is not threading.main_thread()
    ]
    # Threads started outside the threading module that run Python now (a native library's
    # thread in a callback, which holds the GIL while it does): they appear only here.
    known = {thread.ident for thread in threads}
    parts += [
        f"--- thread {ident} (not from threading)" + _innermost(frame)
        for ident, frame in frames.items()
        if ident not in known
    ]
    python = {thread.native_id for thread in threads}
    others = [
        _kernel_state(int(task.name))
        for task in sorted(Path("/proc/self/task").glob("*"))
        if task.name.isdigit() and int(task.name) not in python
    ]
    return (
        f"{len(parts)} threads besides the test's\n"
        + "\n".join(parts)
        + f"\n--- {len(others)} native threads: "
        + "; ".join(others)
    )


def _innermost(frame: FrameType | None) -> str:
    """The innermost frames of a stack, a line each (each line begins with a newline)."""
    summary = traceback.extract_stack(frame, limit=8) if frame else []
    return "".join(f"\n  {Path(f.filename).name}:{f.lineno} {f.name}: {f.line}" for f in summary)


def _kernel_state(native_id: int | None) -> str:
    """The thread's name, the kernel function it sleeps in and its system call's number (from
    /proc): a thread whose Python stack ends in an event loop's C code is told apart between
    waiting for events (epoll_pwait, 281) and waiting on something else (io_uring_enter, 426)."""
    if native_id is None:
        return "[not started]"
    task = Path(f"/proc/self/task/{native_id}")
    try:
        comm = (task / "comm").read_text().strip()
        wchan = (task / "wchan").read_text().strip() or "-"
        syscall = (task / "syscall").read_text().split(" ", 1)[0].strip()
    except OSError as err:
        return f"[{native_id}: {err.strerror}]"
    return f"[{native_id} {comm}: {wchan}, syscall {syscall}]"


def event_loop_tasks() -> str:
    """Every task of every running asyncio event loop of this process (the masters a test
    serves in it), each with the innermost frames it is suspended in: what a request that
    gets no answer, while every thread is idle, is waiting for. Read from another thread,
    best effort (a task that moves on meanwhile shows where it was)."""
    loops = [
        obj
        for obj in gc.get_objects()
        if isinstance(obj, asyncio.AbstractEventLoop) and obj.is_running()
    ]
    parts = []
    for loop in loops:
        try:
            tasks = list(asyncio.all_tasks(loop))
        except RuntimeError as err:  # the loop's task set changed while it was read
            parts.append(f"--- loop {id(loop):#x}: {err}")
            continue
        parts.append(f"--- loop {id(loop):#x}: {len(tasks)} tasks")
        for task in tasks:
            frames = _await_chain(task.get_coro())[-6:]
            where = " <- ".join(
                f"{Path(f.f_code.co_filename).name}:{f.f_lineno} {f.f_code.co_name}"
                for f in reversed(frames)
            )
            parts.append(f"  {task.get_name()}: {where or '(not started or done)'}")
    return f"{len(loops)} running event loops\n" + "\n".join(parts)


def _await_chain(awaitable: object) -> list[FrameType]:
    """The frames of a suspended coroutine and of what it awaits, outermost first."""
    frames = []
    while awaitable is not None:
        frame = next(
            (
                getattr(awaitable, name)
                for name in ("cr_frame", "gi_frame", "ag_frame")
                if getattr(awaitable, name, None) is not None
            ),
            None,
        )
        if frame is not None:
            frames.append(frame)
        awaitable = next(
            (
                getattr(awaitable, name)
                for name in ("cr_await", "gi_yieldfrom", "ag_await")
                if getattr(awaitable, name, None) is not None
            ),
            None,
        )
    return frames


def port_sockets(port: int) -> str:
    """Every TCP socket on this machine with ``port`` at either end, and the processes that
    hold them (``ss -tanp``): whether the port a request timed out on was listening, in this
    process or another, and with how many connections waiting to be accepted."""
    try:
        listed = subprocess.run(
            ["ss", "-tanp", f"( sport = :{port} or dport = :{port} )"],
            capture_output=True,
            text=True,
            timeout=10,
            check=False,
        )
    except (OSError, subprocess.TimeoutExpired) as err:
        return f"ss failed: {err}"
    return f"this process is {os.getpid()}\n{listed.stdout}{listed.stderr}"
