"""The master's own files, private to its user.

The master's home and its SQLite database hold what no one else may read: the accounts'
password hashes, the session tokens' hashes, the experiments' configs (secrets included).
At start (:func:`prepare_home`) the master creates what is missing of them readable by its
own user only: the home and the database's directories 0700, the database file 0600 (SQLite
gives its ``-wal`` and ``-shm`` files the database file's mode, so they are 0600 too). A
database file (or one of its ``-wal``, ``-shm``, ``-journal`` files) that other users could
read or write is refused (:class:`ExposedFilesError`), naming the files, their modes and the
``chmod`` that makes them private: the master does not start on it. What exists already is
never changed by the master.
"""

from __future__ import annotations

import stat
from pathlib import Path

from sqlalchemy import make_url

from pedl.db._engine import create_private_file, make_private_dirs
from pedl.master._settings import MasterSettings

EXPOSED_BITS = stat.S_IRGRP | stat.S_IWGRP | stat.S_IROTH | stat.S_IWOTH
"""A database file with any of these bits (read or write by its group or by others) is
refused."""
SQLITE_COMPANIONS = ("-wal", "-shm", "-journal")


class ExposedFilesError(Exception):
    """The master's database can be read or written by users other than the master's."""


def sqlite_file(settings: MasterSettings) -> Path | None:
    """The master's SQLite database file (absolute), or ``None`` (PostgreSQL, in memory)."""
    if settings.db_backend != "sqlite":
        return None
    database = make_url(settings.db_url).database
    if not database or database == ":memory:" or database.startswith("file:"):
        return None
    return Path(database).expanduser().absolute()


def prepare_home(settings: MasterSettings) -> None:
    """Create the master's home (0700) and its SQLite database file (0600, in directories
    made 0700) where they are missing, then check the database's files: raises
    :class:`ExposedFilesError`, saying how to make them private, when another user could
    read or write one of them."""
    make_private_dirs(settings.home.expanduser())
    path = sqlite_file(settings)
    if path is None:
        return
    create_private_file(path)
    exposed = []
    for candidate in [path, *(path.with_name(path.name + end) for end in SQLITE_COMPANIONS)]:
        try:
            mode = stat.S_IMODE(candidate.stat().st_mode)
        except FileNotFoundError:
            continue
        if mode & EXPOSED_BITS:
            exposed.append((candidate, mode))
    if exposed:
        files = ", ".join(f"{p} (mode {m:o})" for p, m in exposed)
        raise ExposedFilesError(
            f"the master's database can be read or written by other users of this machine: "
            f"{files}. It holds the accounts' password hashes, the sessions and the "
            f"experiments' configs with their secrets, and trials may run as another user. "
            f"Make it private to the master's user: chmod 600 "
            f"{' '.join(str(p) for p, _ in exposed)} (and chmod 700 {path.parent}); the "
            "master does not start until then"
        )
