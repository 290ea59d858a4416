"""What a trial process gets of the master, and what it does not.

- Its environment is the master's without the master's own variables
  (:func:`master_variables`: every ``PEDL_<setting>``, the database URL and the admin password
  among them, and the CLI's sign-in), plus what the resource manager and the experiment add.
- Its token comes over an inherited socket (:func:`pedl.exec.token_channel`), never in an
  environment or on a command line.
- Its temporary files go to a private directory (mode 0700, ``TMPDIR``) that the resource
  manager removes when it has reaped the process, however it ended (:func:`private_dir`);
  where trials run as their own OS user (:mod:`pedl.master.rm._trial_user`) the directory is
  that user's, holds its ``HOME`` too, and lies in a directory of the master's that others
  cannot list.
- The master itself is non-dumpable, and what ``/proc/<master>/environ`` and ``cmdline`` show
  of its secrets is overwritten (:func:`protect_master_process`).
"""

from __future__ import annotations

import ctypes
import os
import re
import shutil
import tempfile
from collections.abc import Mapping, Sequence
from pathlib import Path

from pedl.config._secrets import is_secret_name, url_password_spans
from pedl.exec import make_undumpable, process_alive
from pedl.master._settings import CONFIG_FILE_ENV, MasterSettings
from pedl.master.rm._trial_user import HOME_NAME, TrialUser

TRIAL_DIR_PREFIX = "pedl-trial-"
WORKER_DIR_PREFIX = "pedl-worker-"
_STALE_NAME = re.compile(r"pedl-(?:trial-\d+|worker|trials)-(?P<pid>\d+)-[^-]+")
_OTHER_VARIABLES = ("PEDL_ADMIN_PASSWORD", "PEDL_USER", "PEDL_PASSWORD", "PEDL_TRIAL_TOKEN")
"""Variables the master's environment may hold that are no trial's business, settings or not:
the administrator's password, the CLI's and the SDK's sign-in of whoever started the master, a
trial token of a hand-run trial."""


def master_variables() -> frozenset[str]:
    """The upper-cased names of the master's own environment variables: ``PEDL_<FIELD>`` for
    every field of :class:`~pedl.master.MasterSettings` (read case-insensitively, so compare
    upper-cased), ``PEDL_CONFIG_FILE``, ``PEDL_ADMIN_PASSWORD``, and the CLI's
    ``PEDL_USER``/``PEDL_PASSWORD``."""
    fields = (f"PEDL_{name.upper()}" for name in MasterSettings.model_fields)
    return frozenset({*fields, CONFIG_FILE_ENV.upper(), *_OTHER_VARIABLES})


def trial_environment(master_env: Mapping[str, str]) -> dict[str, str]:
    """``master_env`` without the master's own variables (:func:`master_variables`), in any
    letter case."""
    own = master_variables()
    return {name: value for name, value in master_env.items() if name.upper() not in own}


def private_dir(
    trial_id: int, base: str | Path | None = None, user: TrialUser | None = None
) -> Path:
    """A new directory ``pedl-trial-<id>-<master pid>-*`` (mode 0700) under ``base`` (default
    the master's temporary directory, or with a trial ``user`` its :meth:`TrialUser.root`) for
    one trial process's temporary files; with ``user``, it is that user's, with a ``home``
    of its own (:func:`private_variables`)."""
    prefix = f"{TRIAL_DIR_PREFIX}{trial_id}-{os.getpid()}-"
    if user is not None and base is None:
        base = user.root()
    path = Path(tempfile.mkdtemp(prefix=prefix, dir=base))
    if user is not None:
        try:
            user.give(path)
        except OSError:
            remove_dir(path)
            raise
    return path


def worker_dir(user: TrialUser | None = None) -> Path:
    """A new directory ``pedl-worker-<master pid>-*`` (mode 0700) for a warm worker's own
    temporary files and, under it, its trials' :func:`private_dir`; with a trial ``user``, as
    :func:`private_dir` makes it."""
    path = Path(
        tempfile.mkdtemp(
            prefix=f"{WORKER_DIR_PREFIX}{os.getpid()}-",
            dir=None if user is None else user.root(),
        )
    )
    if user is not None:
        try:
            user.give(path)
        except OSError:
            remove_dir(path)
            raise
    return path


def private_variables(directory: Path, user: TrialUser | None) -> dict[str, str]:
    """The variables of a process whose private directory is ``directory``: ``TMPDIR``, and
    with a trial ``user`` also ``HOME`` (its ``home``); without one ``HOME`` stays the
    master's."""
    variables = {"TMPDIR": str(directory)}
    if user is not None:
        variables["HOME"] = str(directory / HOME_NAME)
    return variables


def remove_stale_dirs(root: str | Path | None = None) -> list[Path]:
    """Remove the directories of :func:`private_dir` and :func:`worker_dir` under ``root``
    (default the temporary directory) whose master is gone (e.g. SIGKILLed before it could
    remove them); return them."""
    removed = []
    for path in Path(root or tempfile.gettempdir()).glob("pedl-*"):
        match = _STALE_NAME.fullmatch(path.name)
        if match is None or not path.is_dir() or process_alive(int(match.group("pid"))):
            continue
        shutil.rmtree(path, ignore_errors=True)
        removed.append(path)
    return removed


def remove_dir(path: Path | None) -> None:
    """Remove a private directory and everything in it (nothing if ``None`` or gone)."""
    if path is not None:
        shutil.rmtree(path, ignore_errors=True)


def protect_master_process() -> None:
    """Keep this process's secrets from the trial processes it starts (Linux; elsewhere
    nothing):

    - it becomes non-dumpable (:func:`pedl.exec.make_undumpable`): processes of the same user
      without ``CAP_SYS_PTRACE`` cannot read its ``/proc/<pid>/environ``, memory or open files;
    - in the memory that ``/proc/<pid>/environ`` shows (what the process was started with),
      the values of the master's variables that hold secrets (names that look secret, e.g.
      ``PEDL_ADMIN_PASSWORD``, and URL passwords, e.g. in ``PEDL_DB_URL``) are overwritten
      with ``*``, and so are URL passwords in ``/proc/<pid>/cmdline`` (``--db-url``);
      ``os.environ`` loses those variables too, so that no process it starts later inherits
      them, unless they were set after the start (then they are the program's own).

    Root reads every process's memory: against model code running as root, nothing here
    holds.
    """
    make_undumpable()
    areas = _start_areas()
    if areas is None:
        return
    (arg_start, arg_end), (env_start, env_end) = areas
    own = master_variables()
    offset = 0
    for entry in _read(env_start, env_end).split(b"\0"):
        name, sep, value = entry.partition(b"=")
        text_name = name.decode(errors="replace")
        if sep and text_name.upper() in own:
            masked = _masked_value(text_name, value)
            if masked != value:
                _write(env_start + offset + len(name) + 1, masked)
                if os.environ.get(text_name, "").encode() == value:
                    os.environ.pop(text_name, None)
        offset += len(entry) + 1
    args = _read(arg_start, arg_end)
    masked_args = _masked_urls(args)
    if masked_args != args:
        _write(arg_start, masked_args)


def _masked_value(name: str, value: bytes) -> bytes:
    """``value`` with its secret characters replaced by ``*`` (same length)."""
    if is_secret_name(name):
        return b"*" * len(value)
    return _masked_urls(value)


def _masked_urls(data: bytes) -> bytes:
    """``data`` with the password of every ``scheme://user:password@`` replaced by ``*``s of
    the same length."""
    out = bytearray(data)
    for start, end in url_password_spans(data.decode("latin-1")):  # one char per byte
        out[start:end] = b"*" * (end - start)
    return bytes(out)


def _start_areas() -> tuple[tuple[int, int], tuple[int, int]] | None:
    """The addresses of this process's start arguments and environment (what
    ``/proc/self/cmdline`` and ``environ`` show), from ``/proc/self/stat``; ``None`` where
    there is no such file."""
    try:
        stat = Path("/proc/self/stat").read_text()
    except OSError:
        return None
    fields: Sequence[str] = stat.rsplit(")", 1)[1].split()
    # fields 48-51 of proc(5): arg_start arg_end env_start env_end (field 3 is fields[0])
    try:
        arg_start, arg_end, env_start, env_end = (int(f) for f in fields[45:49])
    except (ValueError, IndexError):
        return None
    if not (arg_start < arg_end and env_start < env_end):
        return None
    return (arg_start, arg_end), (env_start, env_end)


def _read(start: int, end: int) -> bytes:
    return ctypes.string_at(start, end - start)


def _write(address: int, data: bytes) -> None:
    ctypes.memmove(address, data, len(data))
