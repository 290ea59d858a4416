"""Keeping a process's secrets from its neighbours: its token comes over an inherited socket
(never the environment or the command line), and other processes of the same user cannot
look inside it through ``/proc`` or ptrace."""

from __future__ import annotations

import contextlib
import ctypes
import os
import socket
import sys
from collections.abc import MutableMapping

TOKEN_FD_ENV = "PEDL_TRIAL_TOKEN_FD"
"""Names the file descriptor from which a trial process reads its token (the resource
manager's end of it is closed once the token is written)."""
_PR_SET_DUMPABLE = 4
_PR_SET_NAME = 15
_MAX_TOKEN = 4096


def make_undumpable() -> None:
    """Make this process non-dumpable (Linux ``PR_SET_DUMPABLE`` 0; elsewhere nothing): its
    ``/proc/<pid>`` files (environment, memory, open files) then belong to root and cannot
    be read, nor the process traced, by other processes of the same user that lack
    ``CAP_SYS_PTRACE`` (root keeps every right). It also writes no core dump. A program it
    starts with ``exec`` is dumpable again."""
    _prctl(_PR_SET_DUMPABLE, 0)


def name_process(name: bytes) -> None:
    """Set the name ``top`` and ``ps -o comm`` show (Linux ``PR_SET_NAME``, up to 15 bytes;
    elsewhere nothing): for a process forked without ``exec``, whose command line is still
    its parent's."""
    _prctl(_PR_SET_NAME, name)


def _prctl(option: int, argument: int | bytes) -> None:
    """Linux's ``prctl(option, argument)``; nothing elsewhere, or where it fails."""
    if not sys.platform.startswith("linux"):
        return
    with contextlib.suppress(OSError, AttributeError):
        ctypes.CDLL(None, use_errno=True).prctl(option, argument, 0, 0, 0)


def token_channel(token: str) -> socket.socket:
    """The child's end of a Unix socket pair that holds ``token`` (our end is closed): pass
    its file descriptor to the child (``pass_fds``), name it in :data:`TOKEN_FD_ENV`, and
    close it here once the child is started.

    A socket rather than a pipe: a pipe can be opened again through ``/proc/<pid>/fd`` by
    any process of the same user until the child has read it; a socket cannot."""
    ours, theirs = socket.socketpair(socket.AF_UNIX, socket.SOCK_STREAM)
    with ours:
        ours.sendall(token.encode())
    return theirs


def take_token(environ: MutableMapping[str, str] | None = None) -> str | None:
    """Read this process's token from the socket :data:`TOKEN_FD_ENV` names (then closed, and
    the variable removed from ``environ``, default ``os.environ``); ``None`` when it is not
    set (e.g. a trial run by hand with ``PEDL_TRIAL_TOKEN``)."""
    env = os.environ if environ is None else environ
    raw = env.pop(TOKEN_FD_ENV, None)
    if not raw:
        return None
    try:
        fd = int(raw)
    except ValueError as err:
        raise ValueError(f"{TOKEN_FD_ENV}={raw!r} is not a file descriptor") from err
    chunks: list[bytes] = []
    try:
        with socket.socket(fileno=fd) as channel:
            while chunk := channel.recv(_MAX_TOKEN):
                chunks.append(chunk)
    except OSError as err:
        raise ValueError(f"cannot read the trial's token from {TOKEN_FD_ENV}={fd}: {err}") from err
    return b"".join(chunks).decode()


def process_alive(pid: int) -> bool:
    """Whether process ``pid`` exists (one of another user's counts as alive)."""
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except OSError:
        return True
    return True
