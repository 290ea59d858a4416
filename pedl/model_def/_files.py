"""Which files of a model directory are packaged: ``.pedlignore``/``.detignore`` and the
built-in exclusions."""

from __future__ import annotations

import os
import stat
from dataclasses import dataclass
from pathlib import Path

import pathspec

from pedl.model_def._errors import ModelDefError

IGNORE_FILE = ".pedlignore"
DETERMINED_IGNORE_FILE = ".detignore"
"""Determined's name of the ignore file, honoured as well: a model directory moved over from
Determined keeps excluding what it excluded there."""

# Byte-compiled Python is never packaged, whatever .pedlignore says.
_ALWAYS_IGNORED = pathspec.GitIgnoreSpec.from_lines(["__pycache__/", "*.pyc"])


@dataclass(frozen=True)
class SourceFile:
    """One file to package: its relative POSIX path and the real file its content comes from."""

    relpath: str
    source: Path


def list_files(model_dir: str | Path) -> list[str]:
    """Return the relative POSIX paths of the files that ``package(model_dir)`` would hold.

    A directory is walked recursively. A ``.pedlignore`` file at its top (and Determined's
    ``.detignore``, whose patterns are added to it when both exist) excludes paths with
    ``.gitignore`` semantics (negation, directory patterns, globs, anchoring; an excluded
    directory is not descended into, so a file inside it cannot be re-included). ``*.pyc``
    files and ``__pycache__/`` directories are always excluded; the ignore files are kept.
    A symbolic link counts as the file or directory it points to, provided that target lies
    inside ``model_dir``; a link that escapes it, or dangles, raises :class:`ModelDefError`
    naming the link (unless the link is ignored). A single ``.py`` file lists as its own name.
    The result is sorted and does not depend on the file system's listing order.
    """
    return [f.relpath for f in collect_files(model_dir)]


def collect_files(model_dir: str | Path) -> list[SourceFile]:
    """Like :func:`list_files`, also giving the real path each file's content is read from."""
    root = Path(model_dir)
    if not root.exists():
        raise ModelDefError(f"Model definition {str(root)!r} does not exist.")
    if root.is_file():
        if root.suffix != ".py":
            raise ModelDefError(
                f"Model definition {str(root)!r} is a file but not a Python (.py) file; "
                "give a directory or a single .py file."
            )
        return [SourceFile(root.name, root.resolve())]
    if not root.is_dir():
        raise ModelDefError(f"Model definition {str(root)!r} is neither a directory nor a file.")

    real_root = root.resolve()
    spec = _read_ignore_spec(real_root)
    found: list[SourceFile] = []
    _walk(real_root, real_root, "", spec, {real_root}, found)
    found.sort(key=lambda f: f.relpath)
    return found


def _read_ignore_spec(root: Path) -> pathspec.GitIgnoreSpec:
    lines: list[str] = []
    for name in (DETERMINED_IGNORE_FILE, IGNORE_FILE):
        ignore_path = root / name
        if not ignore_path.is_file():
            continue
        try:
            lines += ignore_path.read_text(encoding="utf-8").splitlines()
        except (OSError, UnicodeDecodeError) as e:
            raise ModelDefError(f"Cannot read {str(ignore_path)!r}: {e}") from e
    try:
        return pathspec.GitIgnoreSpec.from_lines(lines)
    except ValueError as e:
        names = f"{IGNORE_FILE} / {DETERMINED_IGNORE_FILE}"
        raise ModelDefError(
            f"Cannot read the ignore patterns of {str(root)!r} ({names}): {e}"
        ) from e


def _is_ignored(spec: pathspec.GitIgnoreSpec, relpath: str, is_dir: bool) -> bool:
    candidate = relpath + "/" if is_dir else relpath
    return _ALWAYS_IGNORED.match_file(candidate) or spec.match_file(candidate)


def _walk(
    real_root: Path,
    directory: Path,
    prefix: str,
    spec: pathspec.GitIgnoreSpec,
    ancestors: set[Path],
    found: list[SourceFile],
) -> None:
    with os.scandir(directory) as it:
        entries = sorted(it, key=lambda e: e.name)
    for entry in entries:
        relpath = prefix + entry.name
        path = Path(entry.path)
        is_link = entry.is_symlink()
        # For a link, its kind is the kind of its target (a dangling link counts as a file).
        is_dir = os.path.isdir(path) if is_link else entry.is_dir(follow_symlinks=False)
        if _is_ignored(spec, relpath, is_dir):
            continue
        target = _resolve_link(real_root, path, relpath) if is_link else path
        if is_dir:
            if target in ancestors:
                raise ModelDefError(
                    f"Symbolic link {relpath!r} in the model definition points to one of its own "
                    f"parent directories (a cycle). Remove it or list it in {IGNORE_FILE}."
                )
            _walk(real_root, target, relpath + "/", spec, ancestors | {target}, found)
            continue
        mode = target.stat().st_mode
        if not stat.S_ISREG(mode):
            raise ModelDefError(
                f"{relpath!r} in the model definition is not a regular file (a device, socket or "
                f"pipe); only files and directories can be packaged. List it in {IGNORE_FILE}."
            )
        found.append(SourceFile(relpath, target))


def _resolve_link(real_root: Path, link: Path, relpath: str) -> Path:
    """Return the real path a symbolic link points to; refuse links that dangle or escape."""
    target = Path(os.path.realpath(link))
    if not target.exists():
        raise ModelDefError(
            f"Symbolic link {relpath!r} in the model definition dangles (points to "
            f"{os.readlink(link)!r}); remove it or list it in {IGNORE_FILE}."
        )
    if not target.is_relative_to(real_root):
        raise ModelDefError(
            f"Symbolic link {relpath!r} in the model definition points outside it (to "
            f"{str(target)!r}); copy the target into the model directory or list the link "
            f"in {IGNORE_FILE}."
        )
    return target
