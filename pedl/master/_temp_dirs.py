"""The master's own temporary directories, and their removal after a master that died.

A master makes these directories in the system's temporary directory, each named after the
process that made it, ``pedl-<kind>-<pid>-<random>`` (mode 0700, :func:`tempfile.mkdtemp`):

- ``pedl-reads-<pid>-*``: the Unix sockets of its read processes (:mod:`._reads`);
- ``pedl-searcher-<pid>-*``: a custom searcher's working directory
  (:class:`pedl.searcher.RemoteSearchMethod`, which names it the same way).

A master removes them when it stops; one that is SIGKILLed cannot. The next master to start
removes those whose process is gone (:func:`remove_dead_owners_dirs`), and never one whose
process runs: several masters may share the machine. (A process id that the system gave to
another process since only keeps a directory longer.) The directories of trial processes and
warm workers are removed the same way by the resource manager
(:func:`pedl.master.rm._isolation.remove_stale_dirs`).
"""

from __future__ import annotations

import os
import re
import shutil
import stat
import tempfile
from pathlib import Path

from pedl.exec import process_alive

MASTER_TEMP_KINDS = ("reads", "searcher")
"""The kinds of temporary directory a master (or a process it runs in) makes."""
_OWNED_NAME = re.compile(r"pedl-(?:" + "|".join(MASTER_TEMP_KINDS) + r")-(?P<pid>\d+)-[^-/]+")


def master_temp_dir(kind: str) -> Path:
    """A new directory ``pedl-<kind>-<this process's id>-*`` (mode 0700) in the temporary
    directory; ``kind`` is one of :data:`MASTER_TEMP_KINDS`."""
    if kind not in MASTER_TEMP_KINDS:
        raise ValueError(f"unknown kind of temporary directory {kind!r}")
    return Path(tempfile.mkdtemp(prefix=f"pedl-{kind}-{os.getpid()}-"))


def remove_dead_owners_dirs(root: str | Path | None = None) -> list[Path]:
    """Remove the directories named like :func:`master_temp_dir`'s under ``root`` (default
    the temporary directory) that belong to this user and whose process is gone; return
    them. Links and other users' directories are left alone."""
    removed = []
    uid = os.getuid()
    for path in Path(root or tempfile.gettempdir()).glob("pedl-*"):
        match = _OWNED_NAME.fullmatch(path.name)
        if match is None or int(match.group("pid")) == os.getpid():
            continue
        try:
            info = path.lstat()
        except OSError:
            continue
        if not stat.S_ISDIR(info.st_mode) or info.st_uid != uid:
            continue
        if process_alive(int(match.group("pid"))):
            continue
        shutil.rmtree(path, ignore_errors=True)
        removed.append(path)
    return removed
