"""Reading a model-definition archive as a stream of raw tar headers, within limits.

:func:`scan` decompresses the archive a bounded chunk at a time and walks its 512-byte tar
headers itself, so that every size a header declares (a member's data, a GNU long name or
long link, a PAX header) is checked against a limit *before* anything behind it is read:
``tarfile`` would read a long-name header's whole payload into memory first. The headers are
parsed with :meth:`tarfile.TarInfo.frombuf` and the extended headers are applied as
``tarfile`` applies them, so that the members seen here are the members ``tarfile`` yields;
whatever the two could read differently (sparse files, a global PAX header that renames or
resizes members, malformed PAX records, names that are not UTF-8) is refused.
"""

from __future__ import annotations

import bz2
import itertools
import lzma
import re
import tarfile
import zlib
from collections.abc import Iterator
from typing import IO, Protocol, Self

from pedl.model_def._errors import ArchiveLimitError, ModelDefError, UnsafeArchiveError

BLOCK = tarfile.BLOCKSIZE
CHUNK = 64 * 1024
"""The most compressed bytes read, and decompressed bytes produced, at a time."""

MAX_NAME_BYTES = 255
"""The longest component of a member's path, in UTF-8 bytes (``NAME_MAX`` of Linux's file
systems: a longer one could not be written when the archive is unpacked)."""
MAX_EXTENDED_IN_A_ROW = 8
"""The most extended headers before one member (a PAX global and extended header, a GNU long
name and long link make four)."""

SHOWN_CHARS = 120
"""Member names longer than this are cut in error messages."""

_EXTENDED_TYPES = {
    tarfile.GNUTYPE_LONGNAME: "GNU long name",
    tarfile.GNUTYPE_LONGLINK: "GNU long link name",
    tarfile.XHDTYPE: "PAX header",
    tarfile.SOLARIS_XHDTYPE: "PAX header",
    tarfile.XGLTYPE: "PAX global header",
}
_MEMBER_FIELDS = ("path", "linkpath", "size")
"""The PAX keywords that change a member's name, link or size (refused in a global header,
which ``tarfile`` applies differently from the next member's header)."""
_PAX_RECORD = re.compile(rb"(\d+) ([^=]+)=")
"""``tarfile``'s own pattern of a PAX record's start: ``"%d %s=%s\\n" % (length, key, value)``."""

_GZIP_MAGIC = b"\x1f\x8b"
_COMPRESSIONS = {"gz": _GZIP_MAGIC, "bz2": b"BZh", "xz": b"\xfd7zXZ\x00"}


def shown(name: str) -> str:
    """``repr(name)``, cut to :data:`SHOWN_CHARS` characters with its length when longer."""
    if len(name) <= SHOWN_CHARS:
        return repr(name)
    return f"{name[:SHOWN_CHARS]!r}... ({len(name)} characters)"


def human(n: int) -> str:
    """A byte count for people: ``512 B``, ``1.5 MiB``."""
    value = float(n)
    for unit in ("B", "KiB", "MiB", "GiB"):
        if value < 1024 or unit == "GiB":
            return f"{value:.0f} {unit}" if unit == "B" else f"{value:.1f} {unit}"
        value /= 1024
    raise AssertionError("unreachable")


class Limits:
    """The limits an archive is read within, and the counts so far: members, unpacked bytes,
    extended-header bytes, and every member's normalised path (for duplicates).

    Each method raises :class:`ArchiveLimitError` (naming the keyword argument of
    :func:`~pedl.model_def.check_archive` as ``limit``) or :class:`UnsafeArchiveError` for the
    member or header that passes a limit; one instance reads one archive.
    """

    def __init__(
        self,
        *,
        max_unpacked_bytes: int,
        max_members: int,
        max_header_bytes: int,
        max_path_chars: int,
    ) -> None:
        self.max_unpacked_bytes = max_unpacked_bytes
        self.max_members = max_members
        self.max_header_bytes = max_header_bytes
        self.max_path_chars = max_path_chars
        self.members = 0
        self.unpacked = 0
        self.header_bytes = 0
        self.paths: dict[str, bool] = {}  # normalised path -> is a directory

    def extended(self, header: tarfile.TarInfo, offset: int) -> None:
        """Count an extended header's payload, from its size field, before it is read."""
        what = _EXTENDED_TYPES[header.type]
        self.header_bytes += header.size
        if self.header_bytes > self.max_header_bytes:
            raise ArchiveLimitError(
                f"The {what} at byte {offset} of the tar stream is {human(header.size)} "
                f"({header.size} bytes), which brings the archive's extended headers (GNU long "
                f"names and links, PAX headers) to {self.header_bytes} bytes, over the limit of "
                f"{self.max_header_bytes} bytes; refusing to read it.",
                limit="max_header_bytes",
            )

    def count(self, member: tarfile.TarInfo) -> None:
        """Count a member and, for a regular file, its size (from its header)."""
        self.members += 1
        if self.members > self.max_members:
            raise ArchiveLimitError(
                f"Archive member {shown(member.name)} exceeds the limit of {self.max_members} "
                "members; refusing to unpack.",
                limit="max_members",
            )
        self.unpacked += member.size if member.isreg() else 0
        if self.unpacked > self.max_unpacked_bytes:
            raise ArchiveLimitError(
                f"Archive member {shown(member.name)} brings the unpacked size to "
                f"{self.unpacked} bytes, over the limit of {self.max_unpacked_bytes} bytes; "
                "refusing to unpack.",
                limit="max_unpacked_bytes",
            )

    def path(self, member: tarfile.TarInfo, name: str) -> None:
        """Check a member's path (``name``: normalised, as :func:`extract` writes it): its
        length, its components' lengths, and that no earlier member had it."""
        raw = member.name
        if len(raw) > self.max_path_chars:
            raise ArchiveLimitError(
                f"Archive member {shown(raw)} has a path of {len(raw)} characters, over the "
                f"limit of {self.max_path_chars} characters; refusing to unpack.",
                limit="max_path_chars",
            )
        for part in name.split("/"):
            size = len(part.encode("utf-8", "surrogateescape"))
            if size > MAX_NAME_BYTES:
                raise UnsafeArchiveError(
                    f"Archive member {shown(raw)} has a path component of {size} bytes, "
                    f"over the {MAX_NAME_BYTES} bytes a file system allows; refusing to unpack."
                )
        if name in self.paths:
            raise UnsafeArchiveError(
                f"Archive member {shown(raw)} is a duplicate entry: the archive already has "
                f"{shown(name)}; refusing to unpack."
            )
        self.paths[name] = member.isdir()

    def finish(self) -> None:
        """Once every member is read: refuse a regular file that another member's path puts
        a directory in (``a`` and ``a/b.py``), which could not be unpacked."""
        # With "/" as "\0" (which no name holds), a path's descendants sort right after it.
        ordered = sorted((name.replace("/", "\0"), isdir) for name, isdir in self.paths.items())
        for (name, isdir), (after, _) in itertools.pairwise(ordered):
            if not isdir and after.startswith(name + "\0"):
                file, inside = name.replace("\0", "/"), after.replace("\0", "/")
                raise UnsafeArchiveError(
                    f"Archive member {shown(inside)} lies inside {shown(file)}, which is a "
                    "file; refusing to unpack."
                )


class _Decompressor(Protocol):
    """What :class:`Inflated` needs of ``zlib``'s, ``bz2``'s and ``lzma``'s decompressors."""

    @property
    def eof(self) -> bool: ...
    @property
    def unused_data(self) -> bytes: ...
    @property
    def needs_input(self) -> bool: ...
    def decompress(self, data: bytes, max_length: int = -1) -> bytes: ...


class _Gzip:
    """One gzip member, decompressed with ``zlib`` in the shape of ``bz2``'s decompressor."""

    def __init__(self) -> None:
        self._zlib = zlib.decompressobj(16 + zlib.MAX_WBITS)
        self._tail = b""
        self.needs_input = True

    @property
    def eof(self) -> bool:
        return self._zlib.eof

    @property
    def unused_data(self) -> bytes:
        return self._zlib.unused_data

    def decompress(self, data: bytes, max_length: int = -1) -> bytes:
        self._tail = self._tail + data if self._tail else data
        out = self._zlib.decompress(self._tail, max_length)
        self._tail = self._zlib.unconsumed_tail
        self.needs_input = not self._tail and len(out) < max_length
        return out


class _Plain:
    """An uncompressed tar, in the shape of a decompressor."""

    eof = False
    unused_data = b""

    def __init__(self) -> None:
        self._tail = b""
        self.needs_input = True

    def decompress(self, data: bytes, max_length: int = -1) -> bytes:
        self._tail = self._tail + data if self._tail else data
        out, self._tail = self._tail[:max_length], self._tail[max_length:]
        self.needs_input = not self._tail
        return out


def _decompressor(compression: str) -> _Decompressor:
    if compression == "gz":
        return _Gzip()
    if compression == "bz2":
        return bz2.BZ2Decompressor()
    if compression == "xz":
        return lzma.LZMADecompressor()
    return _Plain()


class Inflated:
    """The tar stream inside an archive, decompressed a bounded chunk at a time.

    ``chunks`` yields the archive's bytes. The compression is told by its first bytes:
    gzip, or, when ``any_compression``, also bzip2, xz or none (as ``tarfile``'s ``r:*``).
    Concatenated gzip members are read on as :class:`gzip.GzipFile` reads them (zero bytes
    between them skipped, anything else after one an error); concatenated bzip2 or xz streams
    as :mod:`bz2` and :mod:`lzma` read them (trailing data that is not one ignored). At most
    :data:`CHUNK` bytes beyond what was asked for are held. Decompression errors and a stream
    cut short are :class:`ModelDefError`.
    """

    def __init__(self, chunks: Iterator[bytes], *, any_compression: bool) -> None:
        self._chunks = chunks
        self._pending = b""  # compressed bytes read but not yet given to the decompressor
        self._buffer = bytearray()
        self._ended = False
        self.position = 0
        """The number of decompressed bytes read or skipped so far."""
        head = self._input(6)
        found = next((c for c, magic in _COMPRESSIONS.items() if head.startswith(magic)), "")
        if found != "gz" and not any_compression:
            raise ModelDefError("its first bytes are not those of gzip")
        self._compression = found
        self._decompressor = _decompressor(found)

    def read(self, size: int) -> bytes:
        """The next ``size`` bytes, or fewer at the end of the stream."""
        while len(self._buffer) < size and self._more():
            pass
        out = bytes(self._buffer[:size])
        del self._buffer[:size]
        self.position += len(out)
        return out

    def skip(self, size: int) -> int:
        """Pass over the next ``size`` bytes (decompressed and dropped a chunk at a time);
        the number passed over, fewer only at the end of the stream."""
        skipped = 0
        while True:
            taken = min(size - skipped, len(self._buffer))
            del self._buffer[:taken]
            skipped += taken
            if skipped == size or not self._more():
                break
        self.position += skipped
        return skipped

    def _input(self, size: int) -> bytes:
        """At least ``size`` pending compressed bytes when there are that many (not consumed)."""
        while len(self._pending) < size:
            chunk = next(self._chunks, None)
            if chunk is None:
                break
            self._pending += chunk
        return self._pending[:size]

    def _more(self) -> bool:
        """Decompress the next piece into the buffer; False at the end of the stream."""
        while not self._ended:
            decompressor = self._decompressor
            if decompressor.eof:
                self._next_stream(decompressor.unused_data)
                continue
            data = b""
            if decompressor.needs_input:
                data = self._pending or next(self._chunks, b"")
                self._pending = b""
                if not data:
                    if self._compression:
                        raise ModelDefError("the compressed data is cut short")
                    self._ended = True
                    break
            try:
                out = decompressor.decompress(data, CHUNK)
            except (zlib.error, lzma.LZMAError, OSError, EOFError) as e:
                raise ModelDefError(f"it cannot be decompressed: {e}") from e
            if out:
                self._buffer += out
                return True
        return False

    def _next_stream(self, unused: bytes) -> None:
        """After a compressed stream's end: start the next one, or end."""
        self._pending = unused + self._pending
        if self._compression == "gz":
            self._pending = self._pending.lstrip(b"\0")
            while not self._pending:
                chunk = next(self._chunks, None)
                if chunk is None:
                    self._ended = True
                    return
                self._pending = chunk.lstrip(b"\0")
            if self._input(2) != _GZIP_MAGIC:
                raise ModelDefError("the data after a gzip member is not gzip")
            self._decompressor = _Gzip()
            return
        magic = _COMPRESSIONS[self._compression]
        if self._input(len(magic)) == magic:
            self._decompressor = _decompressor(self._compression)
        else:
            self._ended = True


def chunks(stream: IO[bytes], size: int | None, max_bytes: int | None) -> Iterator[bytes]:
    """``stream``'s bytes, :data:`CHUNK` at a time, refused (``max_bytes``) as soon as they
    pass ``max_bytes``: from ``size`` before anything is read when it is known, else while
    reading."""
    if max_bytes is not None and size is not None:
        _check_size(size, max_bytes)
    total = 0
    while chunk := stream.read(CHUNK):
        total += len(chunk)
        if max_bytes is not None:
            _check_size(total, max_bytes, at_least=True)
        yield chunk


def byte_chunks(archive: bytes, max_bytes: int | None) -> Iterator[bytes]:
    """``archive`` :data:`CHUNK` at a time, refused first when it is over ``max_bytes``."""
    if max_bytes is not None:
        _check_size(len(archive), max_bytes)
    view = memoryview(archive)
    for start in range(0, len(archive), CHUNK):
        yield bytes(view[start : start + CHUNK])


def _check_size(size: int, max_bytes: int, *, at_least: bool = False) -> None:
    if size > max_bytes:
        what = "at least " if at_least else ""
        raise ArchiveLimitError(
            f"The model definition archive is {what}{human(size)} ({size} bytes), over the "
            f"limit of {human(max_bytes)} ({max_bytes} bytes).",
            limit="max_bytes",
        )


def scan(stream: Inflated, limits: Limits) -> Iterator[tarfile.TarInfo]:
    """Yield each member of the tar ``stream`` (extended headers applied), checked against
    ``limits`` (counted, and its path checked by the caller through
    :meth:`Limits.path`) before its data is passed over; every extended header's size is
    checked before it is read. Ends at the end-of-archive block (or the stream's end at a
    header's place, as ``tarfile``). Raises :class:`ModelDefError` for a header that is not
    a tar header, a stream cut short, or what ``tarfile`` would read differently."""
    extended: list[tuple[bytes, bytes | dict[str, bytes]]] = []
    while True:
        offset = stream.position
        block = stream.read(BLOCK)
        if not block or block.count(0) == BLOCK:
            if extended:
                raise ModelDefError(f"the archive ends after an extended header (byte {offset})")
            if not block and offset == 0:
                raise ModelDefError("it is empty")
            return
        try:
            header = tarfile.TarInfo.frombuf(block, "utf-8", "surrogateescape")
        except tarfile.HeaderError as e:
            raise ModelDefError(f"the block at byte {offset} is not a tar header ({e})") from e
        if header.size < 0:
            raise ModelDefError(f"the header at byte {offset} has a negative size")
        if header.type == tarfile.GNUTYPE_SPARSE:
            raise UnsafeArchiveError(
                f"Archive member {shown(header.name)} is a GNU sparse file; only regular "
                "files and directories are allowed."
            )
        if header.type in _EXTENDED_TYPES:
            if len(extended) == MAX_EXTENDED_IN_A_ROW:
                raise UnsafeArchiveError(
                    f"The archive has more than {MAX_EXTENDED_IN_A_ROW} extended headers in "
                    f"a row (at byte {offset}); refusing to unpack."
                )
            limits.extended(header, offset)
            payload = stream.read(header.size)
            if len(payload) < header.size or stream.skip(_padding(header.size)) < _padding(
                header.size
            ):
                raise ModelDefError(f"the archive is cut short in the header at byte {offset}")
            content: bytes | dict[str, bytes] = payload
            if header.type in (tarfile.XHDTYPE, tarfile.SOLARIS_XHDTYPE, tarfile.XGLTYPE):
                content = _pax_records(payload, offset)
                _check_pax(content, header.type, offset)
            extended.append((header.type, content))
            continue
        member = _applied(header, extended, offset)
        extended = []
        limits.count(member)
        if member.isdir() and member.size:
            raise UnsafeArchiveError(
                f"Archive member {shown(member.name)} is a directory with a size of "
                f"{member.size} bytes; refusing to unpack."
            )
        yield member
        if member.isreg():
            size = member.size + _padding(member.size)
            if stream.skip(size) < size:
                raise ModelDefError(f"the archive is cut short in member {shown(member.name)}")


def _padding(size: int) -> int:
    return -size % BLOCK


def _applied(
    header: tarfile.TarInfo, extended: list[tuple[bytes, bytes | dict[str, bytes]]], offset: int
) -> tarfile.TarInfo:
    """The member ``tarfile`` reads from ``header`` and the extended headers before it (a
    GNU long name's or link's payload, a PAX header's records): applied innermost first, as
    ``tarfile``'s recursion applies them."""
    member = header
    for kind, content in reversed(extended):
        if isinstance(content, bytes):
            text = _text(content.split(b"\0", 1)[0], offset)
            if kind == tarfile.GNUTYPE_LONGNAME:
                member.name = text.removesuffix("/") if member.isdir() else text
            else:
                member.linkname = text
        elif kind in (tarfile.XHDTYPE, tarfile.SOLARIS_XHDTYPE):
            records = content
            if "path" in records:
                member.name = _text(records["path"], offset).rstrip("/")
            if "linkpath" in records:
                member.linkname = _text(records["linkpath"], offset)
            if "size" in records:
                member.size = _pax_size(records["size"], offset)
    if "\0" in member.name or any("\udc80" <= c <= "\udcff" for c in member.name):
        raise UnsafeArchiveError(
            f"Archive member {shown(member.name)} has a name that is not UTF-8 text or holds "
            "a NUL; refusing to unpack."
        )
    return member


def _pax_records(payload: bytes, offset: int) -> dict[str, bytes]:
    """A PAX header's records (``keyword: value``), parsed as ``tarfile`` parses them; a
    record whose length does not end at its newline is refused (``tarfile`` would stop
    there or read on differently), as is anything but NUL bytes after the last one."""
    records: dict[str, bytes] = {}
    pos = 0
    while pos < len(payload):
        match = _PAX_RECORD.match(payload, pos)
        if match is not None and len(match.group(1)) > len(str(len(payload))):
            match = None  # a length longer than the header (and int() of 5,000 digits fails)
        if match is None:
            if payload[pos:].strip(b"\0"):
                raise ModelDefError(f"the PAX header at byte {offset} holds a malformed record")
            break
        end = match.start(1) + int(match.group(1))
        if end <= match.end() or end > len(payload) or payload[end - 1] != ord("\n"):
            raise ModelDefError(f"the PAX header at byte {offset} holds a malformed record")
        records[_text(match.group(2), offset)] = payload[match.end() : end - 1]
        pos = end
    return records


def _check_pax(records: dict[str, bytes], kind: bytes, offset: int) -> None:
    for keyword in records:
        if keyword.startswith("GNU.sparse."):
            raise UnsafeArchiveError(
                f"The PAX header at byte {offset} describes a GNU sparse file ({keyword!r}); "
                "only regular files and directories are allowed."
            )
        if kind == tarfile.XGLTYPE and keyword in _MEMBER_FIELDS:
            raise UnsafeArchiveError(
                f"The PAX global header at byte {offset} sets {keyword!r} for every member; "
                "refusing to unpack."
            )


def _pax_size(value: bytes, offset: int) -> int:
    try:
        size = int(value)
    except ValueError:
        size = -1
    if size < 0:
        raise ModelDefError(f"the PAX header at byte {offset} has an invalid size {value[:40]!r}")
    return size


def _text(value: bytes, offset: int) -> str:
    try:
        return value.decode("utf-8")
    except UnicodeDecodeError as e:
        raise UnsafeArchiveError(
            f"The extended header at byte {offset} holds a name that is not UTF-8; refusing "
            "to unpack."
        ) from e


def guarded_tarinfo(max_header_bytes: int) -> type[tarfile.TarInfo]:
    """A :class:`tarfile.TarInfo` class for ``tarfile.open(..., tarinfo=...)`` that refuses,
    from its raw header and before ``tarfile`` reads what follows, an extended header over
    ``max_header_bytes`` and a GNU sparse file (whose maps ``tarfile`` reads block by block).
    A second line of defence behind :func:`scan`."""

    class GuardedTarInfo(tarfile.TarInfo):
        @classmethod
        def frombuf(cls, buf: bytes | bytearray, encoding: str, errors: str) -> Self:
            header = super().frombuf(buf, encoding, errors)
            if header.type in _EXTENDED_TYPES and not 0 <= header.size <= max_header_bytes:
                raise ArchiveLimitError(
                    f"An extended header of {header.size} bytes is over the limit of "
                    f"{max_header_bytes} bytes; refusing to read it.",
                    limit="max_header_bytes",
                )
            if header.type == tarfile.GNUTYPE_SPARSE:
                raise UnsafeArchiveError(
                    f"Archive member {shown(header.name)} is a GNU sparse file; only regular "
                    "files and directories are allowed."
                )
            return header

    return GuardedTarInfo
