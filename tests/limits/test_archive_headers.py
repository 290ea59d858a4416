"""Issue 25 item 2: a model definition archive's raw tar headers are bounded. A GNU long name
or a PAX header that claims 1 GiB (in a 1 MB upload) is refused from its size field before
any of it is read, in little memory and within a second; a member path over the limit, a
duplicate entry and what ``tarfile`` could read differently are refused naming the member;
``extract`` refuses all of it as ``check_archive`` does; the limits are master settings."""

from __future__ import annotations

import base64
import io
import os
import re
import struct
import tarfile
import tempfile
import time
import tracemalloc
import zlib
from collections.abc import Callable, Iterable, Iterator
from pathlib import Path
from typing import Any

import httpx
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from pedl.master import MasterSettings
from pedl.model_def import (
    ArchiveLimitError,
    ModelDefError,
    UnsafeArchiveError,
    check_archive,
    extract,
    package,
)
from tests.master.helpers import CONFIG_YAML, served_master, sign_in
from tests.waits import scaled

from .conftest import Master

GiB = 1024**3
MiB = 1024**2


def gzip_of(pieces: Iterable[tuple[bytes, int]]) -> bytes:
    """A valid gzip of the concatenation of ``data * times`` for each piece, never built:
    each piece's data is deflated once, after a full flush (so that it refers to nothing
    before it), and its compressed form repeated ``times`` times."""
    deflate = zlib.compressobj(9, zlib.DEFLATED, -zlib.MAX_WBITS)
    out = [b"\x1f\x8b\x08\x00\x00\x00\x00\x00\x02\xff"]
    crc = size = 0
    for data, times in pieces:
        out.append((deflate.compress(data) + deflate.flush(zlib.Z_FULL_FLUSH)) * times)
        for _ in range(times):
            crc = zlib.crc32(data, crc)
        size += len(data) * times
    out.append(deflate.flush())
    out.append(struct.pack("<II", crc, size & 0xFFFFFFFF))
    return b"".join(out)


def header(name: str, kind: bytes = tarfile.REGTYPE, size: int = 0) -> bytes:
    """A raw 512-byte tar header (GNU format: any size fits, in base-256 when it must)."""
    info = tarfile.TarInfo(name)
    info.type = kind
    info.size = size
    block = info.tobuf(tarfile.GNU_FORMAT)
    assert len(block) == 512
    return block


def pad(size: int) -> bytes:
    return b"\0" * (-size % 512)


def filler(size: int, byte: bytes = b"a") -> Iterator[tuple[bytes, int]]:
    """``size`` bytes of ``byte``, as pieces of at most 1 MiB."""
    if size >= MiB:
        yield byte * MiB, size // MiB
    if size % MiB:
        yield byte * (size % MiB), 1


END = (b"\0" * 1024, 1)


def long_name_archive(size: int) -> bytes:
    """A .tar.gz whose one member has a GNU long name of ``size`` bytes (then a 1-byte file)."""
    return gzip_of(
        [
            (header("././@LongLink", tarfile.GNUTYPE_LONGNAME, size), 1),
            *filler(size),
            (pad(size) + header("short", size=1) + b"x" + pad(1), 1),
            END,
        ]
    )


def record_length(body: int) -> int:
    """The length of a PAX record whose text after the length field is ``body`` bytes."""
    digits = len(str(body))
    while len(str(body + digits)) != digits:
        digits += 1
    return body + digits


def pax_archive(path_chars: int) -> bytes:
    """A .tar.gz whose one member's PAX header holds a ``path`` record of ``path_chars``."""
    size = record_length(len(b" path=\n") + path_chars)
    prefix = f"{size} path=".encode()
    return gzip_of(
        [
            (header("././@PaxHeader", tarfile.XHDTYPE, size) + prefix, 1),
            *filler(path_chars),
            (b"\n" + pad(size) + header("short", size=1) + b"x" + pad(1), 1),
            END,
        ]
    )


@pytest.fixture(scope="module")
def gib_long_name() -> bytes:
    archive = long_name_archive(GiB)
    assert len(archive) < 2 * MiB  # about 1 MB to upload
    return archive


@pytest.fixture(scope="module")
def gib_pax() -> bytes:
    archive = pax_archive(GiB)
    assert len(archive) < 2 * MiB
    return archive


def test_the_streamed_archives_are_real_tars(tmp_path: Path) -> None:
    # The same builders, small: tarfile reads the names back, and with the limits raised the
    # archives pass the check and unpack.
    for archive, name_chars in [(long_name_archive(3000), 3000), (pax_archive(2500), 2500)]:
        with tarfile.open(fileobj=io.BytesIO(archive), mode="r:gz") as tar:
            (member,) = tar.getmembers()
            assert member.name == "a" * name_chars
        with pytest.raises(ArchiveLimitError):  # 255-byte components, 1024-character paths
            check_archive(archive)
    nested = "/".join(["d" * 200] * 15)  # 3014 characters in components of 200
    archive = gzip_of(
        [
            (header("././@LongLink", tarfile.GNUTYPE_LONGNAME, len(nested)), 1),
            (nested.encode() + pad(len(nested)) + header("x", size=1) + b"x" + pad(1), 1),
            END,
        ]
    )
    check_archive(archive, max_path_chars=4000)
    written = extract(archive, tmp_path / "out", max_path_chars=4000)
    assert written == [nested]


def _measured(call: Callable[[], Any]) -> tuple[BaseException, float, int]:
    """What ``call`` raised, how long it took, and the peak of Python's allocations."""
    tracemalloc.start()
    started = time.monotonic()
    try:
        call()
    except BaseException as e:  # returned for the test to check
        raised = e
    else:
        raise AssertionError("nothing was raised")
    finally:
        elapsed = time.monotonic() - started
        peak = tracemalloc.get_traced_memory()[1]
        tracemalloc.stop()
    return raised, elapsed, peak


@pytest.mark.parametrize("source", ["bytes", "file", "path"])
@pytest.mark.parametrize("kind", ["gnu-long-name", "pax"])
def test_a_gigabyte_extended_header_is_refused_before_it_is_read(
    request: pytest.FixtureRequest, tmp_path: Path, kind: str, source: str
) -> None:
    archive: bytes = request.getfixturevalue(
        "gib_long_name" if kind == "gnu-long-name" else "gib_pax"
    )
    path = tmp_path / "model.tar.gz"
    path.write_bytes(archive)
    with tempfile.TemporaryFile() as spooled:
        spooled.write(archive)
        spooled.seek(0)
        given = {"bytes": archive, "file": spooled, "path": path}[source]
        error, elapsed, peak = _measured(lambda: check_archive(given))
    assert isinstance(error, ArchiveLimitError), repr(error)
    assert error.limit == "max_header_bytes"
    what = "GNU long name" if kind == "gnu-long-name" else "PAX header"
    assert f"{what} at byte 0 of the tar stream is 1.0 GiB" in str(error), str(error)
    assert elapsed < 1, elapsed
    assert peak < 4 * MiB, f"{peak / MiB:.1f} MiB allocated at the peak"


def test_extract_refuses_it_too_before_reading_it(gib_long_name: bytes, tmp_path: Path) -> None:
    error, elapsed, peak = _measured(lambda: extract(gib_long_name, tmp_path / "out"))
    assert isinstance(error, ArchiveLimitError) and error.limit == "max_header_bytes", error
    assert elapsed < 1 and peak < 4 * MiB, (elapsed, peak)
    assert list((tmp_path / "out").iterdir()) == []


@pytest.mark.parametrize("kind", ["gnu-long-name", "pax"])
def test_a_member_path_over_the_limit_is_refused_naming_it_cut(kind: str) -> None:
    archive = long_name_archive(5000) if kind == "gnu-long-name" else pax_archive(5000)
    with pytest.raises(ArchiveLimitError) as caught:
        check_archive(archive)
    message = str(caught.value)
    assert caught.value.limit == "max_path_chars"
    assert f"Archive member {'a' * 120!r}... (5000 characters)" in message, message
    assert "over the limit of 1024 characters" in message
    assert len(message) < 400
    # A lower limit applies to shorter names.
    with pytest.raises(ArchiveLimitError, match=re.escape("'b/c.py' has a path of 6 characters")):
        check_archive(_tar(("b/c.py", b"")), max_path_chars=5)


def _tar(*members: tuple[str, bytes | None], fmt: int = tarfile.PAX_FORMAT) -> bytes:
    """A .tar.gz of files (bytes) and directories (None), in order, names as given."""
    buffer = io.BytesIO()
    with tarfile.open(fileobj=buffer, mode="w:gz", format=fmt) as tar:
        for name, data in members:
            info = tarfile.TarInfo(name)
            if data is None:
                info.type = tarfile.DIRTYPE
                tar.addfile(info)
            else:
                info.size = len(data)
                tar.addfile(info, io.BytesIO(data))
    return buffer.getvalue()


@pytest.mark.parametrize(
    ("members", "fragment"),
    [
        ((("a/b.py", b"1"), ("./a//b.py", b"2")), "'./a//b.py' is a duplicate entry"),
        ((("a", None), ("a/", None)), "'a' is a duplicate entry"),
        ((("a", b""), ("a", None)), "'a' is a duplicate entry"),
        ((("a", b"x"), ("a/b.py", b"")), "'a/b.py' lies inside 'a', which is a file"),
        ((("a/b.py", b""), ("a", b"x")), "'a/b.py' lies inside 'a', which is a file"),
        ((("d/" + "n" * 256, b""),), "a path component of 256 bytes"),
    ],
    ids=[
        "file-twice",
        "dir-twice",
        "file-and-dir",
        "file-then-inside",
        "inside-then-file",
        "component",
    ],
)
def test_members_that_cannot_all_be_unpacked_are_refused(
    tmp_path: Path, members: tuple[tuple[str, bytes | None], ...], fragment: str
) -> None:
    archive = _tar(*members)
    with pytest.raises(UnsafeArchiveError, match=re.escape(fragment)):
        check_archive(archive)
    with pytest.raises(UnsafeArchiveError, match=re.escape(fragment)):
        extract(archive, tmp_path / "out")
    assert list((tmp_path / "out").iterdir()) == []


def _raw(*blocks: bytes) -> bytes:
    gz = zlib.compressobj(6, zlib.DEFLATED, 31)
    return gz.compress(b"".join(blocks) + b"\0" * 1024) + gz.flush()


def _pax(kind: bytes, records: dict[str, str]) -> bytes:
    payload = b""
    for key, value in records.items():
        body = f" {key}={value}\n".encode()
        payload += str(record_length(len(body))).encode() + body
    return header("././@PaxHeader", kind, len(payload)) + payload + pad(len(payload))


@pytest.mark.parametrize(
    ("archive", "fragment"),
    [
        (
            _raw(_pax(tarfile.XGLTYPE, {"path": "evil.py"}), header("a.py"), header("b.py")),
            "PAX global header at byte 0 sets 'path'",
        ),
        (
            _raw(
                _pax(tarfile.XHDTYPE, {"GNU.sparse.major": "1", "GNU.sparse.minor": "0"}),
                header("s"),
            ),
            "GNU sparse file",
        ),
        (_raw(header("s", tarfile.GNUTYPE_SPARSE)), "'s' is a GNU sparse file"),
        (
            _raw(*[header("././@LongLink", tarfile.GNUTYPE_LONGNAME)] * 2000, header("a")),
            "more than 8 extended headers in a row",
        ),
        (_raw(header("d", tarfile.DIRTYPE, 512), b"\0" * 512), "a directory with a size"),
    ],
    ids=["global-path", "pax-sparse", "gnu-sparse", "long-name-chain", "directory-size"],
)
def test_what_tarfile_could_read_differently_is_refused(
    tmp_path: Path, archive: bytes, fragment: str
) -> None:
    with pytest.raises(UnsafeArchiveError, match=re.escape(fragment)):
        check_archive(archive)
    with pytest.raises(UnsafeArchiveError, match=re.escape(fragment)):
        extract(archive, tmp_path / "out")


def test_malformed_pax_records_and_cut_archives_are_not_tars() -> None:
    bad = header("././@PaxHeader", tarfile.XHDTYPE, 12) + b"99 path=a.py" + pad(12)
    with pytest.raises(ModelDefError, match="malformed record"):
        check_archive(_raw(bad, header("a.py")))
    digits = b"9" * 5000 + b" path=a.py\n"  # int() refuses 5,000 digits with a ValueError
    huge = header("././@PaxHeader", tarfile.XHDTYPE, len(digits)) + digits + pad(len(digits))
    with pytest.raises(ModelDefError, match="malformed record"):
        check_archive(_raw(huge, header("a.py")))
    cut = zlib.compressobj(6, zlib.DEFLATED, 31)
    archive = cut.compress(header("a.py", size=4096) + b"x" * 100) + cut.flush()
    with pytest.raises(ModelDefError, match=re.escape("cut short in member 'a.py'")):
        check_archive(archive)


def test_long_names_that_fit_are_accepted_and_unpacked(tmp_path: Path) -> None:
    model = tmp_path / "model"
    deep = model / "/".join(["package"] * 30)  # a 239-character path: a PAX header
    deep.mkdir(parents=True)
    (deep / "module_with_a_long_name.py").write_text("X = 1\n")
    (model / "été.py").write_text("Y = 2\n")  # not ASCII: a PAX header too
    archive = package(model)
    check_archive(archive)
    written = extract(archive, tmp_path / "out")
    assert "été.py" in written and len(written) == 2
    gnu = _tar(("a" * 200 + ".py", b"z"), fmt=tarfile.GNU_FORMAT)  # a GNU long name
    check_archive(gnu)
    assert extract(gnu, tmp_path / "gnu") == ["a" * 200 + ".py"]


def test_a_seekable_file_is_checked_from_where_it_stands(tmp_path: Path) -> None:
    archive = _tar(("m.py", b"x = 1\n"))
    with tempfile.TemporaryFile() as spooled:
        spooled.write(b"ignored prefix" + archive)
        spooled.seek(len(b"ignored prefix"))
        check_archive(spooled, max_bytes=len(archive))
        spooled.seek(len(b"ignored prefix"))
        with pytest.raises(ArchiveLimitError, match="over the limit"):
            check_archive(spooled, max_bytes=len(archive) - 1)
        spooled.seek(len(b"ignored prefix"))
        assert extract(spooled, tmp_path / "out") == ["m.py"]


@pytest.mark.parametrize("mode", ["w", "w:gz", "w:bz2", "w:xz"])
def test_extract_reads_every_compression_tarfile_does(tmp_path: Path, mode: str) -> None:
    # extract scans the archive first in every format tarfile's "r:*" opens (bounded).
    buffer = io.BytesIO()
    with tarfile.open(fileobj=buffer, mode=mode) as tar:
        for i in range(3):
            info = tarfile.TarInfo(f"d/f{i}.bin")
            info.size = 70_000
            tar.addfile(info, io.BytesIO(bytes(range(250)) * 280))
    assert extract(buffer.getvalue(), tmp_path) == ["d/f0.bin", "d/f1.bin", "d/f2.bin"]
    assert (tmp_path / "d" / "f2.bin").read_bytes() == bytes(range(250)) * 280


def test_a_tar_split_across_gzip_members_is_read_whole(tmp_path: Path) -> None:
    # As gzip.GzipFile (and so tarfile) reads it: members in turn, zero bytes between skipped.
    members = [(f"g{i}", b"q" * 100_000) for i in range(3)]
    tar = _tar(*members)
    with tarfile.open(fileobj=io.BytesIO(tar), mode="r:gz") as plain:
        assert len(plain.getmembers()) == 3
    raw = zlib.decompress(tar, 31)
    split = zlib.compress(raw[:50_000], wbits=31) + b"\0\0" + zlib.compress(raw[50_000:], wbits=31)
    check_archive(split)
    assert extract(split, tmp_path) == ["g0", "g1", "g2"]
    with pytest.raises(ArchiveLimitError, match="'g2' exceeds the limit of 2 members"):
        check_archive(split, max_members=2)
    with pytest.raises(ModelDefError, match="not gzip"):
        check_archive(zlib.compress(raw[:50_000], wbits=31) + b"junk" + raw[50_000:])


# --- over HTTP: a real master process on SQLite and PostgreSQL (tests/limits/conftest.py)


def _upload(http: httpx.Client, archive: bytes) -> httpx.Response:
    body = {
        "config": CONFIG_YAML,
        "model_definition": base64.b64encode(archive).decode(),
        "activate": False,
    }
    return http.post("/experiments", json=body)


@pytest.mark.slow
def test_the_master_refuses_gigabyte_headers_at_once_in_little_memory(
    master: Master, gib_long_name: bytes, gib_pax: bytes
) -> None:
    for archive in (gib_long_name, gib_pax):
        started = time.monotonic()
        response = _upload(master.http, archive)
        assert 400 <= response.status_code < 500, response.text
        error = response.json()["error"]
        assert error["field"] == "body.model_definition"
        assert "max_model_definition_header_bytes" in error["message"], error["message"]
        assert "1.0 GiB" in error["message"]
        assert time.monotonic() - started < 10
    master.assert_well()  # peak RSS under 500 MB, still serving


@pytest.mark.slow
def test_the_master_refuses_long_paths_and_duplicates_naming_them(master: Master) -> None:
    response = _upload(master.http, pax_archive(5000))
    assert response.status_code == 422, response.text
    message = response.json()["error"]["message"]
    assert "max_model_definition_path_chars" in message and "(5000 characters)" in message
    assert len(message) < 600, message
    response = _upload(master.http, _tar(("m.py", b"1"), ("./m.py", b"2")))
    assert response.status_code == 422, response.text
    assert "'./m.py' is a duplicate entry" in response.json()["error"]["message"]
    master.assert_well()


# --- the settings


@pytest.fixture(scope="module")
def lowered(tmp_path_factory: pytest.TempPathFactory) -> Iterator[httpx.Client]:
    """A master on SQLite with 40-character paths and 2 KiB of extended headers."""
    settings = MasterSettings(
        home=tmp_path_factory.mktemp("lowered-headers"),
        max_model_definition_path_chars=40,
        max_model_definition_header_bytes=2048,
    )
    with served_master(settings) as (server, database):
        headers = sign_in(database)
        with httpx.Client(
            base_url=server.url + "/api/v1", headers=headers, timeout=scaled(30)
        ) as http:
            yield http


def test_the_settings_come_from_the_environment(monkeypatch: pytest.MonkeyPatch) -> None:
    defaults = MasterSettings()
    assert defaults.max_model_definition_path_chars == 1024
    assert defaults.max_model_definition_header_bytes == MiB
    monkeypatch.setenv("PEDL_MAX_MODEL_DEFINITION_PATH_CHARS", "300")
    monkeypatch.setenv("PEDL_MAX_MODEL_DEFINITION_HEADER_BYTES", str(8 * MiB))
    settings = MasterSettings()
    assert settings.max_model_definition_path_chars == 300
    assert settings.max_model_definition_header_bytes == 8 * MiB


@pytest.mark.parametrize(
    ("archive", "setting"),
    [
        (_tar(("p/" + "q" * 39, b"")), "max_model_definition_path_chars"),
        (long_name_archive(3000), "max_model_definition_header_bytes"),
    ],
    ids=["path", "header"],
)
def test_a_lowered_setting_is_enforced_naming_it(
    lowered: httpx.Client, archive: bytes, setting: str
) -> None:
    response = _upload(lowered, archive)
    assert response.status_code == 422, response.text
    assert setting in response.json()["error"]["message"], response.text
    # Within them, the same master accepts a model definition.
    assert _upload(lowered, _tar(("p/" + "q" * 30, b"x = 1\n"))).status_code == 201


# --- the scan and tarfile agree: whatever check_archive accepts, tarfile reads the same way


def _piece() -> st.SearchStrategy[bytes]:
    names = st.sampled_from(["a", "b/c.py", "./d", "b", "e/", "a" * 99, "é.py", "x/../y"])
    sizes = st.sampled_from([0, 1, 511, 512, 700])

    def regular(name: str, size: int) -> bytes:
        return header(name, size=size) + b"z" * size + pad(size)

    def pax(kind: bytes, key: str, value: str) -> bytes:
        return _pax(kind, {key: value})

    def long_name(name: str) -> bytes:
        data = name.encode() + b"\0"
        return header("././@LongLink", tarfile.GNUTYPE_LONGNAME, len(data)) + data + pad(len(data))

    return st.one_of(
        st.builds(regular, names, sizes),
        st.builds(lambda n: header(n, tarfile.DIRTYPE), names),
        st.builds(long_name, names),
        st.builds(
            pax,
            st.sampled_from([tarfile.XHDTYPE, tarfile.XGLTYPE]),
            st.sampled_from(["path", "size", "mtime", "comment"]),
            st.sampled_from(["f.py", "0", "700", "x", "1_0", " 5", "d/"]),
        ),
    )


@settings(max_examples=150, derandomize=True)
@given(
    pieces=st.lists(_piece(), max_size=6),
    flips=st.lists(st.tuples(st.integers(0, 4000), st.integers(1, 255)), max_size=2),
)
def test_what_check_archive_accepts_tarfile_reads_alike(
    pieces: list[bytes], flips: list[tuple[int, int]]
) -> None:
    stream = bytearray(b"".join(pieces) + b"\0" * 1024)
    for at, xor in flips:
        if at < len(stream):
            stream[at] ^= xor
    gz = zlib.compressobj(6, zlib.DEFLATED, 31)
    archive = gz.compress(bytes(stream)) + gz.flush()
    try:
        check_archive(archive)
    except ModelDefError:
        return
    with tarfile.open(fileobj=io.BytesIO(archive), mode="r:gz") as tar:
        expected = {
            "/".join(p for p in m.name.split("/") if p not in ("", ".")): m.size
            for m in tar.getmembers()
            if m.isreg()
        }
    with tempfile.TemporaryDirectory() as out:
        written = extract(archive, out)
        assert sorted(expected) == written
        for name, size in expected.items():
            assert os.path.getsize(os.path.join(out, name)) == size
