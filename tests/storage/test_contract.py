"""The contract of :class:`pedl.storage.StorageManager`, written once and run against every
backend: shared_fs (a directory) and s3 (a real moto server on loopback)."""

from __future__ import annotations

import threading
from collections.abc import Callable
from pathlib import Path

import pytest

from pedl.storage import S3Storage, SharedFSStorage, StorageManager, list_resources
from tests.s3_server import S3Server

FILES = {
    "a.txt": b"hello",
    "sub/b.bin": bytes(range(256)) * 40,
    "sub/deeper/empty": b"",
}


@pytest.fixture(params=["shared_fs", "s3"])
def storage(request: pytest.FixtureRequest, tmp_path: Path) -> StorageManager:
    if request.param == "shared_fs":
        return SharedFSStorage(tmp_path / "checkpoints")
    server: S3Server = request.getfixturevalue("s3_server")
    return S3Storage(server.new_bucket(), "some/prefix", endpoint_url=server.endpoint_url)


def write(directory: Path, files: dict[str, bytes]) -> None:
    for relpath, data in files.items():
        (directory / relpath).parent.mkdir(parents=True, exist_ok=True)
        (directory / relpath).write_bytes(data)


def read(directory: Path) -> dict[str, bytes]:
    return {
        path.relative_to(directory).as_posix(): path.read_bytes()
        for path in sorted(directory.rglob("*"))
        if path.is_file()
    }


def test_round_trip_gives_exactly_the_stored_files(storage: StorageManager) -> None:
    with storage.store_path("ckpt-1") as path:
        assert list(path.iterdir()) == []
        write(path, FILES)
        (path / "assets").mkdir()  # an empty directory comes back too
        assert not storage.exists("ckpt-1")  # not visible until the block finishes
    assert storage.exists("ckpt-1")
    with storage.restore_path("ckpt-1") as path:
        assert read(path) == FILES
        assert list_resources(path) == {k: len(v) for k, v in sorted(FILES.items())}
        assert (path / "assets").is_dir()


def test_unknown_ids(storage: StorageManager) -> None:
    assert not storage.exists("never-stored")
    with (
        pytest.raises(FileNotFoundError, match="never-stored"),
        storage.restore_path("never-stored"),
    ):
        pass
    storage.delete("never-stored")  # not an error


def test_delete(storage: StorageManager) -> None:
    for storage_id in ("keep", "drop"):
        with storage.store_path(storage_id) as path:
            write(path, FILES)
    storage.delete("drop")
    storage.delete("drop")  # twice is fine
    assert not storage.exists("drop") and storage.exists("keep")
    with pytest.raises(FileNotFoundError), storage.restore_path("drop"):
        pass
    with storage.restore_path("keep") as path:
        assert read(path) == FILES


def test_a_store_block_that_raises_stores_nothing(storage: StorageManager) -> None:
    with pytest.raises(RuntimeError, match="crash mid-write"), storage.store_path("x") as path:
        write(path, FILES)
        raise RuntimeError("crash mid-write")
    assert not storage.exists("x")
    with pytest.raises(FileNotFoundError), storage.restore_path("x"):
        pass


def test_an_id_is_stored_once(storage: StorageManager) -> None:
    with storage.store_path("once") as path:
        write(path, {"v": b"1"})
    with pytest.raises(FileExistsError), storage.store_path("once") as path:
        write(path, {"v": b"2"})
    with storage.restore_path("once") as path:
        assert read(path) == {"v": b"1"}


@pytest.mark.parametrize("bad", ["", "../escape", "a/b", ".hidden"])
def test_ids_are_checked(storage: StorageManager, bad: str) -> None:
    calls: list[Callable[[], object]] = [
        lambda: storage.exists(bad),
        lambda: storage.delete(bad),
        lambda: storage.store_path(bad).__enter__(),
        lambda: storage.restore_path(bad).__enter__(),
        lambda: storage.location(bad),
    ]
    for call in calls:
        with pytest.raises(ValueError, match="invalid checkpoint id"):
            call()


def test_threads_with_distinct_ids_do_not_interfere(storage: StorageManager) -> None:
    errors: list[BaseException] = []

    def one(i: int) -> None:
        try:
            files = {f"f{i}.bin": bytes([i]) * (100 + i), "shared/name.txt": str(i).encode()}
            with storage.store_path(f"t{i}") as path:
                write(path, files)
            with storage.restore_path(f"t{i}") as path:
                assert read(path) == files
            if i % 2:
                storage.delete(f"t{i}")
        except BaseException as err:
            errors.append(err)

    threads = [threading.Thread(target=one, args=(i,)) for i in range(6)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()
    assert errors == []
    assert [storage.exists(f"t{i}") for i in range(6)] == [True, False] * 3


def test_location_names_where_the_files_are(storage: StorageManager, tmp_path: Path) -> None:
    where = storage.location("ckpt-1")
    if isinstance(storage, S3Storage):
        assert where == f"s3://{storage.bucket}/some/prefix/ckpt-1/"
    else:
        assert where == str(tmp_path / "checkpoints" / "ckpt-1")
