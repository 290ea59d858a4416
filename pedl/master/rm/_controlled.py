"""Starting a process that the resource manager drives over a control socket: a warm worker
(:mod:`pedl.master.rm._warm`) or the template they are forked from
(:mod:`pedl.master.rm._template`)."""

from __future__ import annotations

import socket
import subprocess
from collections.abc import Mapping
from pathlib import Path

from pedl.master.rm._isolation import private_variables, remove_dir, worker_dir
from pedl.master.rm._trial_user import TrialUser, popen_kwargs


def start_controlled(
    python: str, module: str, env: Mapping[str, str], *, user: TrialUser | None = None
) -> tuple[subprocess.Popen[bytes], socket.socket, Path]:
    """Start ``python -m module FD`` in its own session with ``env`` and a new private
    directory (``TMPDIR``; with a trial ``user``, as that user, with its ``HOME`` there), ``FD``
    its end of a ``socketpair(AF_UNIX, SOCK_SEQPACKET)``; its output is on the process's
    ``stdout`` and ``stderr`` pipes. Returns the process, the caller's end of the socket and
    the directory (which the caller removes once the process is gone)."""
    tmpdir = worker_dir(user)
    ours, theirs = socket.socketpair(socket.AF_UNIX, socket.SOCK_SEQPACKET)
    try:
        popen = subprocess.Popen(
            [python, "-m", module, str(theirs.fileno())],
            stdin=subprocess.DEVNULL,
            stdout=subprocess.PIPE,
            stderr=subprocess.PIPE,
            env={**env, **private_variables(tmpdir, user)},
            start_new_session=True,
            pass_fds=(theirs.fileno(),),
            **popen_kwargs(user),
        )
    except OSError:
        ours.close()
        remove_dir(tmpdir)
        raise
    finally:
        theirs.close()
    return popen, ours, tmpdir
