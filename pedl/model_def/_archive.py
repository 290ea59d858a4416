"""Packaging a model definition into a deterministic archive, and unpacking one safely."""

from __future__ import annotations

import contextlib
import gzip
import io
import os
import shutil
import stat
import tarfile
from collections.abc import Iterator
from pathlib import Path, PurePosixPath
from typing import IO, Union

from pedl.model_def._errors import ModelDefError, UnsafeArchiveError
from pedl.model_def._files import DETERMINED_IGNORE_FILE, IGNORE_FILE, SourceFile, collect_files
from pedl.model_def._tar_stream import (
    Inflated,
    Limits,
    byte_chunks,
    chunks,
    guarded_tarinfo,
    human,
    scan,
    shown,
)

DEFAULT_MAX_BYTES = 96 * 1024 * 1024
"""The largest packaged model definition (compressed archive size) accepted by default."""

DEFAULT_MAX_UNPACKED_BYTES = 1024 * 1024 * 1024
"""The largest total size of the files :func:`extract` writes, by default (a zip-bomb guard)."""

DEFAULT_MAX_MEMBERS = 10_000
"""The most members (files and directories) :func:`check_archive` and :func:`extract` accept
in one archive, by default."""

DEFAULT_MAX_HEADER_BYTES = 1024 * 1024
"""The most bytes of extended tar headers (GNU long names and long links, PAX headers) in one
archive, in all, by default: each is refused from its size field, before it is read."""

DEFAULT_MAX_PATH_CHARS = 1024
"""The longest member path (characters) :func:`check_archive` and :func:`extract` accept, by
default."""

ArchiveSource = Union[bytes, IO[bytes], str, "os.PathLike[str]"]
"""A model-definition archive: its bytes, a binary file object (read from where it stands),
or the path of a file."""

_FILE_MODE = 0o644
_EXEC_MODE = 0o755
_DIR_MODE = 0o755


def package(
    model_dir: str | Path,
    *,
    max_bytes: int = DEFAULT_MAX_BYTES,
    max_unpacked_bytes: int = DEFAULT_MAX_UNPACKED_BYTES,
    max_members: int = DEFAULT_MAX_MEMBERS,
) -> bytes:
    """Return a gzip-compressed tar of ``list_files(model_dir)``.

    The bytes depend only on the files' relative paths, contents and whether they are
    executable: members are sorted, every mtime is 0, owner and group are 0 with empty names,
    modes are 0o755 (directories, executables) or 0o644, and the gzip header carries no name
    or time. The archive holds regular files and the directories that contain them only;
    a symbolic link is stored as a copy of its target (which must lie inside ``model_dir``).

    The limits are those :func:`check_archive` applies (a client passes the master's). Raises
    :class:`ModelDefError` when the archive would hold more than ``max_members`` files and
    directories, or files of more than ``max_unpacked_bytes`` in all (both known before any
    file is read), or when the archive passes ``max_bytes`` (as soon as it does); each
    message gives the limit, the largest files or the fullest directories, and how to leave
    files out (``.pedlignore`` or ``.detignore``).
    """
    files = collect_files(model_dir)
    dirs = {str(parent) for f in files for parent in PurePosixPath(f.relpath).parents[:-1]}
    if len(files) + len(dirs) > max_members:
        raise ModelDefError(_too_many_message(files, len(dirs), max_members))
    total = sum(f.source.stat().st_size for f in files)
    if total > max_unpacked_bytes:
        raise ModelDefError(
            _too_large_message(files, total, max_unpacked_bytes, "its files add up to")
        )
    buffer = io.BytesIO()
    with (
        gzip.GzipFile(filename="", mode="wb", fileobj=buffer, mtime=0) as gz,
        tarfile.open(fileobj=gz, mode="w", format=tarfile.PAX_FORMAT) as tar,
    ):
        added_dirs: set[str] = set()
        for f in files:
            for parent in reversed(PurePosixPath(f.relpath).parents[:-1]):
                if str(parent) not in added_dirs:
                    added_dirs.add(str(parent))
                    tar.addfile(_tarinfo(str(parent), tarfile.DIRTYPE, 0, _DIR_MODE))
            size = f.source.stat().st_size
            with open(f.source, "rb") as content:
                tar.addfile(_tarinfo(f.relpath, tarfile.REGTYPE, size, _mode_for(f)), content)
            if buffer.tell() > max_bytes:
                break
    size = buffer.tell()
    if size > max_bytes:
        raise ModelDefError(_too_large_message(files, size, max_bytes, "its archive is at least"))
    return buffer.getvalue()


def check_archive(
    archive: ArchiveSource,
    *,
    max_bytes: int = DEFAULT_MAX_BYTES,
    max_unpacked_bytes: int = DEFAULT_MAX_UNPACKED_BYTES,
    max_members: int = DEFAULT_MAX_MEMBERS,
    max_header_bytes: int = DEFAULT_MAX_HEADER_BYTES,
    max_path_chars: int = DEFAULT_MAX_PATH_CHARS,
) -> None:
    """Check a gzip-compressed model-definition archive without unpacking it, header by header
    as the stream is decompressed (64 KiB at a time): only the members' paths are kept, every
    size a header declares is checked before what it announces is read, and the first problem
    stops the reading (a million members are refused after ``max_members``, a GNU long name
    that claims 1 GiB before any of it is read).

    ``archive`` is its bytes, a binary file object (read from its current position, and left
    where the reading stopped; its size, when it is seekable, checked before anything is read)
    or a file's path.

    Raises :class:`ArchiveLimitError`, whose ``limit`` names the keyword argument, when the
    archive is over ``max_bytes``, its regular files over ``max_unpacked_bytes`` (counted
    from the headers, before any member's data is inflated), it has more than ``max_members``
    members, its extended headers (GNU long names and links, PAX headers) add up to more than
    ``max_header_bytes``, or a member's path is longer than ``max_path_chars`` (the name cut
    in the message). Raises :class:`UnsafeArchiveError`, naming the member, for what
    :func:`extract` refuses: an absolute path or a ``..`` component, a link, a device, pipe,
    sparse or other special file, a duplicate entry (the same normalised path twice), a file
    that another member's path puts a directory in, a path component over 255 bytes or a
    name that is not UTF-8; and :class:`ModelDefError` when it is not a gzip-compressed tar
    (or is one that ``tarfile`` could read differently: see ``pedl.model_def._tar_stream``).
    """
    limits = Limits(
        max_unpacked_bytes=max_unpacked_bytes,
        max_members=max_members,
        max_header_bytes=max_header_bytes,
        max_path_chars=max_path_chars,
    )
    with _archive_chunks(archive, max_bytes) as (pieces, size_known):
        try:
            _scan_all(Inflated(pieces, any_compression=False), limits)
        except ModelDefError as e:
            if type(e) is not ModelDefError:
                raise
            raise ModelDefError(
                f"The model definition is not a gzip-compressed tar archive: {e}"
            ) from e
        if not size_known:
            for _ in pieces:  # count the rest against max_bytes
                pass


def _scan_all(stream: Inflated, limits: Limits) -> None:
    """Read every member of ``stream`` within ``limits``, checking each as :func:`extract`
    does (but for the target directory, which it does not look at)."""
    for member in scan(stream, limits):
        name = _check_name(member)
        if name is not None:
            limits.path(member, name)
    limits.finish()


@contextlib.contextmanager
def _archive_chunks(
    archive: ArchiveSource, max_bytes: int | None
) -> Iterator[tuple[Iterator[bytes], bool]]:
    """The archive's bytes a chunk at a time, refused past ``max_bytes``, and whether its
    size was known (and checked) before reading."""
    if isinstance(archive, bytes):
        yield byte_chunks(archive, max_bytes), True
    elif isinstance(archive, (str, os.PathLike)):
        with open(archive, "rb") as stream:
            yield chunks(stream, os.fstat(stream.fileno()).st_size, max_bytes), True
    else:
        size = None
        if archive.seekable():
            start = archive.tell()
            size = archive.seek(0, os.SEEK_END) - start
            archive.seek(start)
        yield chunks(archive, size, max_bytes), size is not None


def extract(
    archive: ArchiveSource,
    target: str | Path,
    *,
    max_unpacked_bytes: int = DEFAULT_MAX_UNPACKED_BYTES,
    max_members: int = DEFAULT_MAX_MEMBERS,
    max_header_bytes: int = DEFAULT_MAX_HEADER_BYTES,
    max_path_chars: int = DEFAULT_MAX_PATH_CHARS,
) -> list[str]:
    """Unpack a model-definition archive into ``target`` and return the files written.

    ``archive`` is its bytes, a seekable binary file object (read from its current position)
    or a file's path; tar, optionally gzip/bz2/xz compressed. The whole archive is first read
    as :func:`check_archive` reads it, with the same limits (so nothing it refuses is
    unpacked): :class:`ArchiveLimitError` or :class:`UnsafeArchiveError`, naming the member,
    for an absolute path, a path with a ``..`` component, a symbolic or hard link, a device,
    pipe or any member that is not a regular file or directory, a duplicate entry, a total
    unpacked size above ``max_unpacked_bytes``, more than ``max_members`` members, extended
    headers over ``max_header_bytes`` or a path over ``max_path_chars``. Then ``tarfile``
    reads it again, its raw headers guarded the same way, every member is checked again
    (with a path that resolves outside ``target``) before anything is written, and
    extraction uses tarfile's ``data`` filter as a last line of defence; written files get
    the current time as mtime. Bytes that are not such an archive raise
    :class:`ModelDefError`.

    Returns the relative POSIX paths of the regular files written, sorted.
    """
    root = Path(target)
    root.mkdir(parents=True, exist_ok=True)
    real_root = root.resolve()

    def limits() -> Limits:
        return Limits(
            max_unpacked_bytes=max_unpacked_bytes,
            max_members=max_members,
            max_header_bytes=max_header_bytes,
            max_path_chars=max_path_chars,
        )

    with _seekable(archive) as stream:
        start = stream.tell()
        try:
            _scan_all(Inflated(chunks(stream, None, None), any_compression=True), limits())
        except ModelDefError as e:
            if type(e) is not ModelDefError:
                raise
            raise ModelDefError(f"The model definition archive cannot be unpacked: {e}") from e
        stream.seek(start)
        try:
            with tarfile.open(
                fileobj=stream, mode="r:*", tarinfo=guarded_tarinfo(max_header_bytes)
            ) as tar:
                members = _checked_members(tar, real_root, limits())
                written: list[str] = []
                for member in members:
                    try:
                        tar.extract(member, real_root, filter=_data_filter_keep_time_now)
                    except tarfile.FilterError as e:
                        raise UnsafeArchiveError(
                            f"Archive member {shown(member.name)} is unsafe: {e}"
                        ) from e
                    if member.isreg():
                        written.append(member.name)
        except (tarfile.TarError, OSError, EOFError) as e:
            raise ModelDefError(f"The model definition archive cannot be unpacked: {e}") from e
    return sorted(set(written))


@contextlib.contextmanager
def _seekable(archive: ArchiveSource) -> Iterator[IO[bytes]]:
    if isinstance(archive, bytes):
        yield io.BytesIO(archive)
    elif isinstance(archive, (str, os.PathLike)):
        with open(archive, "rb") as stream:
            yield stream
    elif not archive.seekable():
        raise ValueError("extract needs a seekable file object (it reads the archive twice)")
    else:
        yield archive


def _checked_members(
    tar: tarfile.TarFile, real_root: Path, limits: Limits
) -> list[tarfile.TarInfo]:
    """Read every member header and check it; raise on the first unsafe one."""
    members: list[tarfile.TarInfo] = []
    for member in tar:
        limits.count(member)
        name = _check_member(member, real_root)
        if name is not None:
            limits.path(member, name)
            members.append(member.replace(name=name, deep=False))
    limits.finish()
    return members


def copy_tree(model_dir: str | Path, target: str | Path) -> None:
    """Copy ``model_dir`` into ``target`` as ``extract(package(model_dir), target)`` would.

    The same files (``list_files``) land at the same relative paths with the same normalised
    modes, without building an archive and without a size limit (for local mode). ``target``
    is created if needed; files already there with the same names are replaced.
    """
    files = collect_files(model_dir)
    root = Path(target)
    root.mkdir(parents=True, exist_ok=True)
    for f in files:
        dest = root.joinpath(*PurePosixPath(f.relpath).parts)
        for parent in reversed(dest.relative_to(root).parents[:-1]):
            (root / parent).mkdir(mode=_DIR_MODE, exist_ok=True)
        if dest.is_symlink():
            dest.unlink()
        shutil.copyfile(f.source, dest)
        os.chmod(dest, _mode_for(f))


def _tarinfo(name: str, kind: bytes, size: int, mode: int) -> tarfile.TarInfo:
    info = tarfile.TarInfo(name)
    info.type = kind
    info.size = size
    info.mode = mode
    info.mtime = 0
    info.uid = info.gid = 0
    info.uname = info.gname = ""
    return info


def _mode_for(f: SourceFile) -> int:
    executable = f.source.stat().st_mode & (stat.S_IXUSR | stat.S_IXGRP | stat.S_IXOTH)
    return _EXEC_MODE if executable else _FILE_MODE


_IGNORE_ADVICE = (
    "Keep data sets and other large artifacts out of the model definition by listing them "
    f"in a {IGNORE_FILE} (or {DETERMINED_IGNORE_FILE}) file at its top (same syntax as "
    ".gitignore)."
)


def _too_large_message(files: list[SourceFile], size: int, limit: int, what: str) -> str:
    sizes = sorted(((f.source.stat().st_size, f.relpath) for f in files), reverse=True)
    largest = "\n".join(f"  {human(s)}  {p}" for s, p in sizes[:5])
    return (
        f"The model definition is too large: {what} {human(size)} "
        f"({size} bytes), over the limit of {human(limit)} ({limit} bytes).\n"
        f"The largest files are:\n{largest}\n{_IGNORE_ADVICE}"
    )


def _too_many_message(files: list[SourceFile], dirs: int, limit: int) -> str:
    per_dir: dict[str, int] = {}
    for f in files:
        parent = str(PurePosixPath(f.relpath).parent)
        per_dir[parent] = per_dir.get(parent, 0) + 1
    fullest = sorted(per_dir.items(), key=lambda item: (-item[1], item[0]))[:5]
    listing = "\n".join(
        f"  {count} file{'' if count == 1 else 's'}  "
        + ("./ (the model directory)" if name == "." else f"{name}/")
        for name, count in fullest
    )
    # ``dirs`` counts the directories under the model directory (the archive's members); the
    # files lie in those and in the model directory itself.
    where = "1 directory" if dirs == 0 else f"{dirs + 1} directories"
    under = "" if dirs == 0 else f" (the model directory and {dirs} under it)"
    return (
        f"The model definition has {len(files)} files in {where}{under}: "
        f"{len(files) + dirs} archive members, more than the limit of {limit} members "
        "(files and directories).\n"
        f"The directories with the most files are:\n{listing}\n{_IGNORE_ADVICE}"
    )


def _check_member(member: tarfile.TarInfo, real_root: Path) -> str | None:
    """Return the member's normalised name, None to skip it (the root), or raise."""
    name = _check_name(member)
    if name is None:
        return None
    dest = Path(os.path.realpath(real_root.joinpath(*name.split("/"))))
    if not dest.is_relative_to(real_root):
        raise UnsafeArchiveError(
            f"Archive member {shown(member.name)} would be written outside the target directory; "
            "refusing to unpack."
        )
    return name


def _check_name(member: tarfile.TarInfo) -> str | None:
    """The member's normalised name, None for the root; raise for a path that escapes, a
    link, or anything but a regular file or directory (without looking at any directory)."""
    raw = member.name
    if raw.startswith(("/", "\\")) or (len(raw) > 1 and raw[0].isalpha() and raw[1] == ":"):
        raise UnsafeArchiveError(
            f"Archive member {shown(raw)} has an absolute path; refusing to unpack."
        )
    parts = PurePosixPath(raw.replace("\\", "/")).parts
    if ".." in parts:
        raise UnsafeArchiveError(
            f"Archive member {shown(raw)} has a '..' component that escapes the target directory; "
            "refusing to unpack."
        )
    parts = tuple(p for p in parts if p != ".")
    if not parts:
        if member.isdir():
            return None
        raise UnsafeArchiveError(
            f"Archive member {shown(raw)} has an empty name; refusing to unpack."
        )
    if member.issym() or member.islnk():
        kind = "symbolic link" if member.issym() else "hard link"
        raise UnsafeArchiveError(
            f"Archive member {shown(raw)} is a {kind} (to {shown(member.linkname)}); links are not "
            "allowed in a model definition archive."
        )
    if member.type == tarfile.GNUTYPE_SPARSE or member.issparse():
        raise UnsafeArchiveError(
            f"Archive member {shown(raw)} is a GNU sparse file; only regular files and "
            "directories are allowed."
        )
    if not (member.isreg() or member.isdir()):
        raise UnsafeArchiveError(
            f"Archive member {shown(raw)} is a device, pipe or other special file; only regular "
            "files and directories are allowed."
        )
    return "/".join(parts)


def _data_filter_keep_time_now(member: tarfile.TarInfo, dest_path: str) -> tarfile.TarInfo:
    """tarfile's ``data`` filter, and leave mtimes at the time of unpacking.

    The archive's fixed mtime of 0 would otherwise make every unpacked source file look
    equally old, which can let Python reuse a stale bytecode cache.
    """
    filtered = tarfile.data_filter(member, dest_path)
    return filtered.replace(mtime=None, deep=False)  # type: ignore[arg-type]
