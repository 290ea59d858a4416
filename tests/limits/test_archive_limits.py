"""``pedl.model_def.check_archive``: a model definition archive checked member by member while
it is decompressed, refusing what ``extract`` refuses without reading it whole."""

from __future__ import annotations

import io
import resource
import tarfile
import time
import zlib
from pathlib import Path

import pytest

from pedl.model_def import ModelDefError, UnsafeArchiveError, check_archive, package

from .conftest import million_member_archive


def _archive(*members: tarfile.TarInfo, data: bytes = b"") -> bytes:
    buffer = io.BytesIO()
    with tarfile.open(fileobj=buffer, mode="w:gz") as tar:
        for member in members:
            tar.addfile(member, io.BytesIO(data) if member.isreg() else None)
    return buffer.getvalue()


def _member(
    name: str, kind: bytes = tarfile.REGTYPE, size: int = 0, link: str = ""
) -> tarfile.TarInfo:
    info = tarfile.TarInfo(name)
    info.type = kind
    info.size = size
    info.linkname = link
    return info


def test_a_plain_model_definition_passes() -> None:
    check_archive(
        _archive(_member("pkg", tarfile.DIRTYPE), _member("pkg/model.py", size=1), data=b"x")
    )


@pytest.mark.parametrize(
    ("member", "fragment"),
    [
        (_member("/etc/passwd"), "absolute path"),
        (_member("a/../../escape.py"), "'..' component"),
        (_member("link", tarfile.SYMTYPE, link="/etc/passwd"), "symbolic link"),
        (_member("hard", tarfile.LNKTYPE, link="/etc/passwd"), "hard link"),
        (_member("dev", tarfile.CHRTYPE), "device"),
        (_member("fifo", tarfile.FIFOTYPE), "device, pipe"),
    ],
)
def test_unsafe_members_are_refused_by_name(member: tarfile.TarInfo, fragment: str) -> None:
    with pytest.raises(UnsafeArchiveError, match=fragment) as caught:
        check_archive(_archive(member))
    assert repr(member.name) in str(caught.value)


def test_unpacked_size_is_counted_from_headers_before_inflating() -> None:
    # A header claiming 2 GiB, and no data behind it: refused before any data is read.
    header = _member("big.bin", size=2 * 1024**3).tobuf(tarfile.GNU_FORMAT)
    gz = zlib.compressobj(1, zlib.DEFLATED, 31)
    archive = gz.compress(header) + gz.flush()
    with pytest.raises(UnsafeArchiveError, match="unpacked size"):
        check_archive(archive)


def test_a_million_members_are_refused_quickly_in_little_memory() -> None:
    archive = million_member_archive()
    before = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss
    started = time.monotonic()
    with pytest.raises(UnsafeArchiveError, match="limit of 10000 members"):
        check_archive(archive)
    assert time.monotonic() - started < 20
    grown_kib = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss - before
    assert grown_kib < 64 * 1024, f"the peak RSS grew by {grown_kib} KiB"


def test_not_a_gzip_tar_and_too_large_are_model_def_errors() -> None:
    with pytest.raises(ModelDefError, match="not a gzip-compressed tar"):
        check_archive(b"plain bytes")
    with pytest.raises(ModelDefError, match="over the limit"):
        check_archive(_archive(_member("a.py")), max_bytes=10)


def test_packaging_refuses_more_members_than_the_master_accepts(tmp_path: Path) -> None:
    for i in range(6):
        (tmp_path / f"m{i}.py").write_text("")
    check_archive(package(tmp_path, max_members=6))  # six files: accepted
    with pytest.raises(ModelDefError, match="6 files in 1 directory: 6 archive members, more "):
        package(tmp_path, max_members=5)
    (tmp_path / "a" / "b").mkdir(parents=True)
    (tmp_path / "a" / "b" / "c.py").write_text("")
    with pytest.raises(ModelDefError) as refused:
        package(tmp_path, max_members=8)
    assert (
        "7 files in 3 directories (the model directory and 2 under it): 9 archive members, "
        "more than the limit of 8 members" in str(refused.value)
    )
    assert "6 files  ./ (the model directory)\n  1 file  a/b/\n" in str(refused.value)
