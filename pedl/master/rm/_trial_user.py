"""Trials as their own OS user: where the master runs as root, its trial processes and warm
workers run as the master's ``trial_user`` (default ``nobody``), with no supplementary groups
and umask 077.

What that user gets, and what it does not:

- a private directory per process, owned by it (mode 0700), holding its ``TMPDIR`` and its
  ``HOME`` (``<dir>/home``), under one directory per master owned by the master's user with
  mode 0711 (``pedl-trials-<master pid>-*`` in the system's temporary directory): it can
  enter its own directory by name, but not list the others';
- its checkpoint storage directory (``shared_fs``/``directory`` storage), which the master
  creates and keeps at mode 1733 (sticky, writable and enterable by others, not listable):
  a trial writes a checkpoint under a random name (a UUID) and cannot see the others';
  every finished checkpoint of the trial user there is *sealed* (handed to the master's user,
  read-only for others: files 0644, directories 0755) when a trial using that directory
  starts or ends, so no trial can change it afterwards;
- nothing else of the master's: its home, its database file and its settings file must be
  out of that user's reach (the master warns at start about each one that is not).

A trial user that cannot run the trials' Python, or reach their checkpoint storage, would
fail every trial of the experiment: the master refuses such an experiment when it is created
or continued (422, :meth:`~pedl.master.rm.LocalResourceManager.launch_problem`), and warns
at start when its own Python or ``checkpoint_dir`` is out of the user's reach.

Where the master is not root it cannot switch users: it says so once, at start, and its
trials run as its own user (:func:`trial_user_for`).
"""

from __future__ import annotations

import contextlib
import logging
import os
import pwd
import shutil
import stat
import sys
import tempfile
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from sqlalchemy import make_url

from pedl.config import CheckpointStorageConfig, DirectoryStorageConfig, SharedFSStorageConfig
from pedl.master._settings import MasterSettings
from pedl.storage import SharedFSStorage, make_storage

logger = logging.getLogger("pedl.master")

TRIALS_DIR_PREFIX = "pedl-trials-"
HOME_NAME = "home"
"""The trial's ``HOME`` inside its private directory."""
TRIAL_UMASK = 0o077
_TEMPORARY_PREFIX = ".tmp-"
"""Names of checkpoints being written (:class:`~pedl.storage.SharedFSStorage`)."""
_STORAGE_MODE = 0o1733
_STICKY_AND_WRITABLE = stat.S_ISVTX | stat.S_IWOTH
_X, _W, _R = 1, 2, 4


@dataclass
class TrialUser:
    """The OS user trials run as (``uid``, its primary group ``gid``), and the directory of
    this master under which their private directories are made (created on first use)."""

    name: str
    uid: int
    gid: int
    _root: Path | None = field(default=None, repr=False)

    @classmethod
    def named(cls, name: str) -> TrialUser:
        """The user ``name``; ``ValueError`` if there is none, or it is root."""
        try:
            entry = pwd.getpwnam(name)
        except KeyError:
            raise ValueError(
                f"trial_user {name!r} (PEDL_TRIAL_USER) is no user of this machine: name an "
                "existing unprivileged user (e.g. nobody, or one made for PEDL's trials), or "
                "'' to run trials as the master's user"
            ) from None
        if entry.pw_uid == 0:
            raise ValueError(
                f"trial_user {name!r} (PEDL_TRIAL_USER) is root: name an unprivileged user"
            )
        return cls(name, entry.pw_uid, entry.pw_gid)

    def popen_kwargs(self) -> dict[str, Any]:
        """What :class:`subprocess.Popen` needs to start a process as this user."""
        return {"user": self.uid, "group": self.gid, "extra_groups": [], "umask": TRIAL_UMASK}

    def root(self) -> Path:
        """This master's directory of private directories (mode 0711, the master's, in its
        temporary directory). Raises ``PermissionError`` when the user cannot reach it."""
        if self._root is None or not self._root.is_dir():
            unreachable = self.temporary_unreachable()
            if unreachable is not None:
                raise PermissionError(unreachable)
            root = Path(tempfile.mkdtemp(prefix=f"{TRIALS_DIR_PREFIX}{os.getpid()}-"))
            root.chmod(0o711)
            self._root = root
        return self._root

    def temporary_unreachable(self) -> str | None:
        """Why the user cannot reach the master's temporary directory (where :meth:`root`
        lies), or ``None`` when it can."""
        temporary = Path(tempfile.gettempdir())
        blocked = self.barrier(temporary)
        if blocked is None:
            return None
        return (
            f"trials run as {self.name} (the master's trial_user), which cannot reach "
            f"the master's temporary directory {temporary}: it may not enter "
            f"{blocked}. Start the master with TMPDIR naming a directory it can enter "
            "(e.g. /tmp)"
        )

    def remove_root(self) -> None:
        """Remove :meth:`root` and what is left in it (the resource manager's shutdown)."""
        if self._root is not None:
            shutil.rmtree(self._root, ignore_errors=True)
            self._root = None

    def give(self, directory: Path) -> None:
        """Hand a new private ``directory`` (0700, just made by the master) to the user, with
        a ``home`` of its own in it; through file descriptors, so that a process of the user
        that can write where ``directory`` lies (a warm worker's directory) cannot make the
        master hand it something else."""
        flags = os.O_RDONLY | os.O_DIRECTORY | os.O_NOFOLLOW | os.O_CLOEXEC
        fd = os.open(directory, flags)
        try:
            os.mkdir(HOME_NAME, 0o700, dir_fd=fd)
            home = os.open(HOME_NAME, flags, dir_fd=fd)
            try:
                os.fchown(home, self.uid, self.gid)
            finally:
                os.close(home)
            os.fchown(fd, self.uid, self.gid)
        finally:
            os.close(fd)

    def may(self, path: Path, want: int, st: os.stat_result | None = None) -> bool:
        """Whether the user may ``want`` (``_R``, ``_W``, ``_X`` bits) ``path`` by its mode
        bits (owner, group, others; no supplementary groups, ACLs not read)."""
        st = st if st is not None else path.stat()
        if st.st_uid == self.uid:
            bits = st.st_mode >> 6
        elif st.st_gid == self.gid:
            bits = st.st_mode >> 3
        else:
            bits = st.st_mode
        return bits & want == want

    def barrier(self, path: Path) -> Path | None:
        """The first existing directory on the way to ``path`` (itself included, if it is one)
        that the user may not enter; ``None`` when there is none."""
        resolved = Path(os.path.realpath(path))
        for directory in [*reversed(resolved.parents), resolved]:
            try:
                st = directory.stat()
            except FileNotFoundError:
                return None  # the rest is created by the master
            if stat.S_ISDIR(st.st_mode) and not self.may(directory, _X, st):
                return directory
        return None

    def check_runnable(self, python: str) -> None:
        """Raise ``PermissionError``, naming what to change, unless the user may run the
        interpreter ``python`` (a path or a command on PATH) by the modes of its file and of
        the directories on the way (symbolic links resolved)."""
        found = shutil.which(python) or python
        real = Path(os.path.realpath(found))
        blocked = self.barrier(real.parent)
        if blocked is None and real.exists() and self.may(real, _X):
            return
        why = (
            f"it may not enter {blocked} (mode {stat.S_IMODE(blocked.stat().st_mode):o})"
            if blocked is not None
            else f"{real} is not executable by it"
        )
        raise PermissionError(
            f"trials run as {self.name} (the master's trial_user), which cannot run the Python "
            f"{python} ({real}): {why}. Give trials a Python it can run (installed outside "
            "root's home; PEDL_TRIAL_PYTHON in the experiment's environment_variables names "
            "another), or run trials as the master's user (trial_user '', PEDL_TRIAL_USER=)"
        )

    def can_read(self, path: Path) -> bool:
        """Whether the user could open ``path`` (a file) or list it (a directory)."""
        if not path.exists() or self.barrier(path.parent) is not None:
            return False
        return self.may(path, _R)

    def storage_unreachable(self, directory: Path) -> str | None:
        """Why the user cannot reach the checkpoint storage ``directory`` (naming the
        directory that stops it and the settings to change), or ``None`` when it can."""
        blocked = self.barrier(directory)
        if blocked is None:
            return None
        mode = stat.S_IMODE(blocked.stat().st_mode)
        return (
            f"trials run as {self.name} (the master's trial_user), which cannot reach the "
            f"checkpoint storage {directory}: it may not enter {blocked} (mode {mode:o}). "
            "Store checkpoints in a directory it can reach (checkpoint_storage.host_path, "
            "or the master's checkpoint_dir, PEDL_CHECKPOINT_DIR), or run trials as the "
            "master's user (trial_user '', PEDL_TRIAL_USER=)"
        )

    def prepare_storage(self, directory: Path) -> None:
        """Make a checkpoint storage ``directory`` ready for the user's trials (created if
        missing; mode 1733, not the user's, unless it is sticky and writable by all already,
        as ``/tmp``) and seal what is finished in it. Raises ``PermissionError`` naming the
        settings when the user cannot reach it, or when the way there goes through a
        symbolic link of the user's."""
        unreachable = self.storage_unreachable(directory)
        if unreachable is not None:
            raise PermissionError(unreachable)
        fd = self._open_storage(directory, create=True)
        try:
            st = os.fstat(fd)
            if st.st_uid == self.uid or st.st_gid == self.gid:
                os.fchown(
                    fd,
                    os.geteuid() if st.st_uid == self.uid else -1,
                    os.getegid() if st.st_gid == self.gid else -1,
                )
            shared = st.st_mode & _STICKY_AND_WRITABLE == _STICKY_AND_WRITABLE
            if stat.S_IMODE(st.st_mode) != _STORAGE_MODE and not shared:
                os.fchmod(fd, _STORAGE_MODE)
            self._seal_in(fd)
        finally:
            os.close(fd)

    def seal(self, directory: Path) -> list[str]:
        """Hand every finished checkpoint the user wrote in ``directory`` (a storage
        directory: entries whose names do not start with ``.tmp-``) to the master's user,
        read-only for others; return their names. Never follows a symbolic link, and
        touches only what the user owns."""
        try:
            fd = self._open_storage(directory, create=False)
        except OSError:
            return []
        try:
            return self._seal_in(fd)
        finally:
            os.close(fd)

    def _open_storage(self, directory: Path, *, create: bool) -> int:
        """A file descriptor of ``directory``, found component by component from ``/``
        without following a symbolic link of the user's (a trial could make one point at
        ``/etc``): one of another owner is followed, after checking that it is still the
        same link; with ``create``, missing directories are made (mode 0755). Raises
        ``PermissionError`` on a link of the user's, ``OSError`` where the path fails."""
        flags = os.O_RDONLY | os.O_DIRECTORY | os.O_NOFOLLOW | os.O_CLOEXEC
        parts = list(Path(os.path.abspath(directory)).parts[1:])
        fd = os.open("/", flags)
        hops = 0
        try:
            while parts:
                name = parts.pop(0)
                if name in ("", "."):
                    continue
                try:
                    child = os.open(name, flags, dir_fd=fd)
                except FileNotFoundError:
                    if not create:
                        raise
                    with contextlib.suppress(FileExistsError):
                        os.mkdir(name, 0o755, dir_fd=fd)
                    child = os.open(name, flags, dir_fd=fd)  # ELOOP if a link came instead
                except OSError as err:
                    st = os.stat(name, dir_fd=fd, follow_symlinks=False)
                    if not stat.S_ISLNK(st.st_mode):
                        raise err
                    if st.st_uid == self.uid:
                        raise PermissionError(
                            f"the checkpoint storage {directory} goes through {name}, a "
                            f"symbolic link of the trial user {self.name}: a trial could "
                            "point it anywhere; the master does not follow it"
                        ) from None
                    target = os.readlink(name, dir_fd=fd)
                    again = os.stat(name, dir_fd=fd, follow_symlinks=False)
                    hops += 1
                    if (again.st_ino, again.st_dev) != (st.st_ino, st.st_dev) or hops > 40:
                        raise PermissionError(
                            f"the checkpoint storage {directory}: {name} changed, or links "
                            "too often, while the master opened it"
                        ) from None
                    parts = list(Path(target).parts) + parts
                    if target.startswith("/"):
                        parts.pop(0)
                        os.close(fd)
                        fd = os.open("/", flags)
                    continue
                os.close(fd)
                fd = child
        except BaseException:
            os.close(fd)
            raise
        return fd

    def _seal_in(self, storage_fd: int) -> list[str]:
        sealed: list[str] = []
        for entry in list(os.scandir(storage_fd)):
            if entry.name.startswith(_TEMPORARY_PREFIX):
                continue
            with contextlib.suppress(OSError):
                st = entry.stat(follow_symlinks=False)
                if st.st_uid == self.uid and stat.S_ISDIR(st.st_mode):
                    self._seal_tree(storage_fd, entry.name)
                    sealed.append(entry.name)
        return sealed

    def _seal_tree(self, storage_fd: int, name: str) -> None:
        for _, _, files, dir_fd in os.fwalk(name, dir_fd=storage_fd, follow_symlinks=False):
            self._seal_fd(dir_fd, 0o755)
            for file in files:
                try:
                    fd = os.open(
                        file,
                        os.O_RDONLY | os.O_NOFOLLOW | os.O_NONBLOCK | os.O_CLOEXEC,
                        dir_fd=dir_fd,
                    )
                except OSError:  # a symbolic link, a socket: only handed over
                    with contextlib.suppress(OSError):
                        st = os.stat(file, dir_fd=dir_fd, follow_symlinks=False)
                        if st.st_uid == self.uid:
                            os.chown(
                                file,
                                os.geteuid(),
                                os.getegid(),
                                dir_fd=dir_fd,
                                follow_symlinks=False,
                            )
                    continue
                try:
                    self._seal_fd(fd, 0o644)
                finally:
                    os.close(fd)

    def _seal_fd(self, fd: int, mode: int) -> None:
        st = os.fstat(fd)
        if st.st_uid != self.uid:
            return
        os.fchown(fd, os.geteuid(), os.getegid())
        os.fchmod(fd, mode | (0o111 if st.st_mode & stat.S_IXUSR else 0))


def popen_kwargs(user: TrialUser | None) -> dict[str, Any]:
    """:meth:`TrialUser.popen_kwargs`, or nothing without a trial user."""
    return {} if user is None else user.popen_kwargs()


def storage_directory(config: CheckpointStorageConfig) -> Path | None:
    """The directory on this machine where trials with this checkpoint storage write
    (``shared_fs``, ``directory``), else ``None``."""
    if isinstance(config, (SharedFSStorageConfig, DirectoryStorageConfig)):
        storage = make_storage(config)
        assert isinstance(storage, SharedFSStorage)
        return storage.base_path
    return None


def trial_user_for(settings: MasterSettings) -> TrialUser | None:
    """The user the master's trials run as: ``settings.trial_user`` where the master runs as
    root, else ``None`` (its own user). Logs, once: that it cannot switch users (not root);
    and, with a trial user, each of the master's files that user could read (home, SQLite
    database, settings file) and a ``checkpoint_dir`` it cannot reach. Raises ``ValueError``
    for a trial user that does not exist or is root."""
    name = settings.trial_user
    if not name:
        return None
    if os.geteuid() != 0:
        logger.warning(
            "trials run as %s, the master's own user: only a master running as root can run "
            "them as trial_user %r, and this one is not root. Its trials can read and write "
            "whatever %s can (see docs/security.md)",
            _me(),
            name,
            _me(),
        )
        return None
    user = TrialUser.named(name)
    for what, path in _master_files(settings):
        if user.can_read(path):
            logger.warning(
                "trials run as %s, which can read the master's %s %s: make it readable by the "
                "master's user only (e.g. chmod 700 on the home)",
                name,
                what,
                path,
            )
    blocked = user.barrier(settings.checkpoint_dir)
    if blocked is not None:
        logger.warning(
            "trials run as %s, which cannot reach checkpoint_dir %s (it may not enter %s): "
            "experiments without a checkpoint_storage of their own are refused (422) until "
            "checkpoint_dir (PEDL_CHECKPOINT_DIR) names a directory it can reach",
            name,
            settings.checkpoint_dir,
            blocked,
        )
    try:
        user.check_runnable(sys.executable)
    except PermissionError as err:
        logger.warning(
            "%s. This is the master's own Python, the trials' default: experiments that do not "
            "name one %s can run in PEDL_TRIAL_PYTHON are refused (422)",
            err,
            name,
        )
    logger.info("trials run as %s (uid %d, gid %d)", name, user.uid, user.gid)
    return user


def _master_files(settings: MasterSettings) -> list[tuple[str, Path]]:
    files = [("home", settings.home)]
    if settings.db_backend == "sqlite":
        database = make_url(settings.db_url).database
        if database and database != ":memory:" and not database.startswith("file:"):
            files.append(("database file", Path(database).absolute()))
    if settings.config_file is not None:
        files.append(("settings file", settings.config_file))
    return files


def _me() -> str:
    try:
        return pwd.getpwuid(os.geteuid()).pw_name
    except KeyError:
        return f"uid {os.geteuid()}"
