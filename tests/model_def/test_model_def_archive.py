"""package / extract / copy_tree: determinism, size limit, unsafe archives, round trips."""

from __future__ import annotations

import gzip
import io
import os
import random
import tarfile
import time
from pathlib import Path

import pytest

from pedl.model_def import (
    ModelDefError,
    UnsafeArchiveError,
    copy_tree,
    extract,
    list_files,
    package,
)


def write(root: Path, relpath: str, content: str | bytes = "x") -> Path:
    path = root / relpath
    path.parent.mkdir(parents=True, exist_ok=True)
    if isinstance(content, bytes):
        path.write_bytes(content)
    else:
        path.write_text(content)
    return path


def make_model(root: Path) -> Path:
    write(root, "__init__.py", "from .model import MyTrial\n")
    write(root, "model.py", "class MyTrial: pass\n")
    write(root, "lib/helpers.py", "def f():\n    return 1\n")
    write(root, "data/big.bin", b"\0" * 1000)
    write(root, "__pycache__/model.cpython-311.pyc", b"junk")
    write(root, ".pedlignore", "data/\n")
    run = write(root, "run.sh", "#!/bin/sh\n")
    run.chmod(0o700)
    return root


def tar_bytes(*members: tuple[tarfile.TarInfo, bytes | None], compress: bool = True) -> bytes:
    buffer = io.BytesIO()
    with tarfile.open(fileobj=buffer, mode="w:gz" if compress else "w") as tar:
        for info, data in members:
            tar.addfile(info, io.BytesIO(data) if data is not None else None)
    return buffer.getvalue()


def member(name: str, data: bytes = b"hi", kind: bytes = tarfile.REGTYPE) -> tarfile.TarInfo:
    info = tarfile.TarInfo(name)
    info.type = kind
    info.size = len(data) if kind == tarfile.REGTYPE else 0
    return info


def test_package_round_trip(tmp_path: Path) -> None:
    model = make_model(tmp_path / "model")
    archive = package(model)
    out = tmp_path / "out"
    written = extract(archive, out)
    assert written == list_files(model)
    assert written == [".pedlignore", "__init__.py", "lib/helpers.py", "model.py", "run.sh"]
    for rel in written:
        assert (out / rel).read_bytes() == (model / rel).read_bytes()
    assert not (out / "data").exists()
    assert os.access(out / "run.sh", os.X_OK)
    assert not os.access(out / "model.py", os.X_OK)


def test_archive_is_normalised_and_deterministic(tmp_path: Path) -> None:
    a = make_model(tmp_path / "a")
    b = tmp_path / "b"
    # Same content written in another order, at another time, with other permissions.
    write(b, ".pedlignore", "data/\n")
    run = write(b, "run.sh", "#!/bin/sh\n")
    run.chmod(0o755)
    write(b, "lib/helpers.py", "def f():\n    return 1\n")
    write(b, "model.py", "class MyTrial: pass\n").chmod(0o600)
    write(b, "__init__.py", "from .model import MyTrial\n")
    os.utime(b / "model.py", (time.time() - 3600, time.time() - 3600))
    first = package(a)
    assert package(a) == first
    assert package(b) == first
    with tarfile.open(fileobj=io.BytesIO(first)) as tar:
        infos = tar.getmembers()
    assert [i.name for i in infos] == [
        ".pedlignore",
        "__init__.py",
        "lib",
        "lib/helpers.py",
        "model.py",
        "run.sh",
    ]
    for info in infos:
        assert (info.mtime, info.uid, info.gid, info.uname, info.gname) == (0, 0, 0, "", "")
        assert info.isdir() or info.isreg()
    modes = {i.name: i.mode for i in infos}
    assert modes["lib"] == 0o755 and modes["run.sh"] == 0o755 and modes["model.py"] == 0o644
    # A content change changes the bytes.
    write(b, "model.py", "class MyTrial: pass  # changed\n")
    assert package(b) != first


def test_symlink_packages_target_content(tmp_path: Path) -> None:
    model = tmp_path / "model"
    write(model, "real.py", "REAL = 1\n")
    os.symlink("real.py", model / "alias.py")
    with tarfile.open(fileobj=io.BytesIO(package(model))) as tar:
        alias = tar.getmember("alias.py")
        assert alias.isreg()
        extracted = tar.extractfile(alias)
        assert extracted is not None and extracted.read() == b"REAL = 1\n"


def test_symlink_escaping_refused_naming_link(tmp_path: Path) -> None:
    model = tmp_path / "model"
    write(model, "model.py")
    os.symlink(write(tmp_path, "elsewhere.py"), model / "link.py")
    with pytest.raises(ModelDefError, match=r"'link\.py'"):
        package(model)


def test_size_limit_message(tmp_path: Path) -> None:
    model = tmp_path / "model"
    rng = random.Random(0)
    for i in range(7):
        write(model, f"blob{i}.bin", rng.randbytes(1000 * (i + 1)))
    write(model, "model.py", "pass\n")
    with pytest.raises(ModelDefError) as info:
        package(model, max_bytes=5000)
    message = str(info.value)
    assert "5000 bytes" in message  # the limit
    assert ".pedlignore" in message
    listed = [f"blob{i}.bin" for i in range(7) if f"blob{i}.bin" in message]
    assert listed == [f"blob{i}.bin" for i in (2, 3, 4, 5, 6)]  # the 5 largest
    assert message.index("blob6.bin") < message.index("blob2.bin")  # largest first
    # The archive size reported is above the limit.
    reported = int(message.split("(")[1].split(" bytes")[0])
    assert reported > 5000
    assert len(package(model, max_bytes=10**6)) <= 10**6


@pytest.mark.parametrize(
    ("info", "data", "fragment"),
    [
        (member("../x"), b"hi", "'../x'"),
        (member("ok/../../x"), b"hi", "'ok/../../x'"),
        (member("/etc/x"), b"hi", "'/etc/x'"),
    ],
)
def test_escaping_paths_refused(
    tmp_path: Path, info: tarfile.TarInfo, data: bytes, fragment: str
) -> None:
    archive = tar_bytes((member("fine.py"), b"hi"), (info, data))
    with pytest.raises(UnsafeArchiveError, match=fragment):
        extract(archive, tmp_path / "out")
    # Nothing was written: all members are checked first.
    assert list((tmp_path / "out").iterdir()) == []
    assert not (tmp_path / "x").exists()


def test_symlink_member_refused(tmp_path: Path) -> None:
    link = member("evil", kind=tarfile.SYMTYPE)
    link.linkname = "/etc/passwd"
    with pytest.raises(UnsafeArchiveError, match=r"'evil'.*symbolic link"):
        extract(tar_bytes((link, None)), tmp_path / "out")


def test_hardlink_member_refused(tmp_path: Path) -> None:
    link = member("hard", kind=tarfile.LNKTYPE)
    link.linkname = "fine.py"
    archive = tar_bytes((member("fine.py"), b"hi"), (link, None))
    with pytest.raises(UnsafeArchiveError, match=r"'hard'.*hard link"):
        extract(archive, tmp_path / "out")


@pytest.mark.parametrize("kind", [tarfile.CHRTYPE, tarfile.BLKTYPE, tarfile.FIFOTYPE])
def test_device_and_fifo_members_refused(tmp_path: Path, kind: bytes) -> None:
    device = member("dev/null", kind=kind)
    device.devmajor, device.devminor = 1, 3
    with pytest.raises(UnsafeArchiveError, match=r"'dev/null'.*special file"):
        extract(tar_bytes((device, None)), tmp_path / "out")


def test_bomb_refused(tmp_path: Path) -> None:
    zeros = b"\0" * (2 * 1024 * 1024)
    archive = tar_bytes((member("small.txt"), b"hi"), (member("bomb.bin", zeros), zeros))
    assert len(archive) < 20_000  # tiny when compressed
    with pytest.raises(UnsafeArchiveError, match=r"'bomb\.bin'.*limit of 1048576"):
        extract(archive, tmp_path / "out", max_unpacked_bytes=1024 * 1024)
    assert not (tmp_path / "out" / "bomb.bin").exists()
    assert extract(archive, tmp_path / "ok", max_unpacked_bytes=3 * 1024 * 1024) == [
        "bomb.bin",
        "small.txt",
    ]


def test_too_many_members_refused(tmp_path: Path) -> None:
    archive = tar_bytes(*[(member(f"f{i}"), b"hi") for i in range(5)])
    with pytest.raises(UnsafeArchiveError, match=r"'f3'.*3 members"):
        extract(archive, tmp_path / "out", max_members=3)


def test_plain_tar_and_dot_prefixed_names_accepted(tmp_path: Path) -> None:
    root = member("./", kind=tarfile.DIRTYPE)
    archive = tar_bytes((root, None), (member("./a/b.py"), b"hi"), compress=False)
    assert extract(archive, tmp_path / "out") == ["a/b.py"]
    assert (tmp_path / "out" / "a" / "b.py").read_bytes() == b"hi"


def test_garbage_refused(tmp_path: Path) -> None:
    with pytest.raises(ModelDefError, match="cannot"):
        extract(b"this is not an archive", tmp_path / "out")
    truncated = gzip.compress(b"\1" * 10_000)
    with pytest.raises(ModelDefError):
        extract(truncated, tmp_path / "out2")


def test_extracted_files_are_not_dated_1970(tmp_path: Path) -> None:
    model = make_model(tmp_path / "model")
    out = tmp_path / "out"
    extract(package(model), out)
    assert (out / "model.py").stat().st_mtime > time.time() - 3600


def test_copy_tree_matches_package_and_extract(tmp_path: Path) -> None:
    model = make_model(tmp_path / "model")
    os.symlink("model.py", model / "alias.py")
    via_archive = tmp_path / "via_archive"
    extract(package(model), via_archive)
    copied = tmp_path / "copied"
    copy_tree(model, copied)

    def snapshot(root: Path) -> dict[str, tuple[bytes, bool, bool]]:
        return {
            p.relative_to(root).as_posix(): (
                p.read_bytes() if p.is_file() else b"",
                p.is_dir(),
                os.access(p, os.X_OK),
            )
            for p in sorted(root.rglob("*"))
        }

    assert snapshot(copied) == snapshot(via_archive)
    assert "alias.py" in snapshot(copied)
    assert not (copied / "alias.py").is_symlink()
