"""The contract of :class:`pedl.storage.StorageManager`, written once and run against every
backend, each made by :func:`pedl.storage.make_storage` from a Determined-style
``checkpoint_storage`` section: shared_fs and directory (a local directory), s3 (moto's
server), gcs (gcp-storage-emulator) and azure (Azurite), the servers real, on loopback.

Upload, download, delete; a block that raises and a process SIGKILLed in the middle of its
upload register no checkpoint, and the next garbage collection removes what the killed one
left; a checkpoint of tens of MB is streamed with bounded memory; credentials are never
logged, shown, or returned.
"""

from __future__ import annotations

import hashlib
import json
import logging
import os
import re
import signal
import subprocess
import sys
import threading
import tracemalloc
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any
from urllib.parse import urlsplit

import pytest

from pedl.config import mask_config, parse_config
from pedl.storage import (
    TORN_UPLOAD_GRACE_SECONDS,
    AzureStorage,
    GCSStorage,
    S3Storage,
    SharedFSStorage,
    StorageManager,
    collect_torn_uploads,
    list_resources,
    make_storage,
)
from pedl.storage._object_store import ObjectStorage
from tests.azurite_server import ACCOUNT_KEY, AzuriteServer
from tests.faults.proxy import Proxy
from tests.gcs_server import EMULATOR_VARIABLE, GCSServer
from tests.s3_server import ACCESS_KEY, SECRET_KEY, S3Server
from tests.waits import scaled

BACKENDS = ["shared_fs", "directory", "s3", "gcs", "azure"]
REMOTE = ["s3", "gcs", "azure"]
PREFIX = "some/prefix"

FILES = {
    "a.txt": b"hello",
    "sub/b.bin": bytes(range(256)) * 40,
    "sub/deeper/empty": b"",
}


@dataclass
class Backend:
    """One backend under test: its config section, the storage made from it, and a look at
    the raw store beneath (every file or object in it, relative to the store's root)."""

    name: str
    section: dict[str, Any]
    objects: Callable[[], list[str]]
    secrets: list[str] = field(default_factory=list)
    through: Callable[[str], tuple[dict[str, Any], dict[str, str]]] | None = None
    """For a remote backend: the section and environment that reach its server through a
    proxy at the given URL."""

    @property
    def storage(self) -> StorageManager:
        return make_storage(checkpoint_storage(self.section))


def checkpoint_storage(section: dict[str, Any]) -> Any:
    config = {
        "searcher": {"name": "single", "metric": "loss", "max_length": {"batches": 1}},
        "checkpoint_storage": section,
    }
    return parse_config(config).checkpoint_storage


def local_files(root: Path) -> Callable[[], list[str]]:
    def objects() -> list[str]:
        if not root.exists():
            return []
        return sorted(p.relative_to(root).as_posix() for p in root.rglob("*") if p.is_file())

    return objects


def relative(keys: list[str], prefix: str = PREFIX) -> list[str]:
    return [key[len(prefix) + 1 :] if prefix else key for key in keys]


@pytest.fixture(params=BACKENDS)
def backend(request: pytest.FixtureRequest, tmp_path: Path) -> Backend:
    name = request.param
    root = tmp_path / "checkpoints"
    if name == "shared_fs":
        section = {"type": "shared_fs", "host_path": str(tmp_path), "storage_path": "checkpoints"}
        return Backend(name, section, local_files(root))
    if name == "directory":
        return Backend(name, {"type": "directory", "container_path": str(root)}, local_files(root))
    if name == "s3":
        s3: S3Server = request.getfixturevalue("s3_server")
        bucket = s3.new_bucket()

        def s3_section(url: str) -> dict[str, Any]:
            return {
                "type": "s3",
                "bucket": bucket,
                "prefix": PREFIX,
                "endpoint_url": url,
                "access_key": ACCESS_KEY,
                "secret_key": SECRET_KEY,
            }

        return Backend(
            name,
            s3_section(s3.endpoint_url),
            lambda: relative(s3.keys(bucket, PREFIX + "/")),
            secrets=[SECRET_KEY],
            through=lambda url: (s3_section(url), {}),
        )
    if name == "gcs":
        gcs: GCSServer = request.getfixturevalue("gcs_server")
        bucket = gcs.new_bucket()
        section = {"type": "gcs", "bucket": bucket, "prefix": PREFIX}
        return Backend(
            name,
            section,
            lambda: relative(gcs.keys(bucket, PREFIX + "/")),
            through=lambda url: (section, {EMULATOR_VARIABLE: url}),
        )
    azurite: AzuriteServer = request.getfixturevalue("azurite_server")
    container = azurite.new_container()

    def azure_section(url: str) -> dict[str, Any]:
        connection = azurite.connection_string.replace(
            azurite.blob_endpoint, url + urlsplit(azurite.blob_endpoint).path
        )
        return {"type": "azure", "container": container, "connection_string": connection}

    return Backend(
        name,
        azure_section(azurite.blob_endpoint.rsplit("/", 1)[0]),
        lambda: azurite.keys(container),  # Determined's azure storage has no prefix
        secrets=[ACCOUNT_KEY, azurite.connection_string],
        through=lambda url: (azure_section(url), {}),
    )


@pytest.fixture
def storage(backend: Backend) -> StorageManager:
    return backend.storage


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


# upload, download, list, delete ------------------------------------------------------------


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


def test_delete(backend: Backend, storage: StorageManager) -> None:
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
    assert not [name for name in backend.objects() if name.startswith("drop")]


def test_a_store_block_that_raises_stores_nothing(
    backend: Backend, storage: StorageManager
) -> None:
    with pytest.raises(RuntimeError, match="crash mid-write"), storage.store_path("x") as path:
        write(path, FILES)
        raise RuntimeError("crash mid-write")
    assert not storage.exists("x")
    with pytest.raises(FileNotFoundError), storage.restore_path("x"):
        pass
    assert backend.objects() == []


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


def test_location_names_where_the_files_are(
    backend: Backend, storage: StorageManager, tmp_path: Path
) -> None:
    where = storage.location("ckpt-1")
    if isinstance(storage, S3Storage):
        assert where == f"s3://{storage.bucket}/{PREFIX}/ckpt-1/"
    elif isinstance(storage, GCSStorage):
        assert where == f"gs://{storage.bucket}/{PREFIX}/ckpt-1/"
    elif isinstance(storage, AzureStorage):
        assert where.endswith(f"/{storage.container}/ckpt-1/")
        assert where.startswith("http://127.0.0.1:")
    else:
        assert isinstance(storage, SharedFSStorage)
        assert where == str(tmp_path / "checkpoints" / "ckpt-1")


def test_a_file_that_differs_from_its_manifest_is_refused(backend: Backend) -> None:
    """What an object store holds is checked against the manifest written at upload: a file
    replaced there by a shorter one is never handed out (S3's own tests check S3's)."""
    storage = backend.storage
    if not isinstance(storage, ObjectStorage):
        pytest.skip("a local checkpoint directory has no manifest; test_s3 covers S3")
    with storage.store_path("c") as path:
        write(path, {"w.bin": b"\1" * 100})
    with storage.store_path("short") as path:
        write(path, {"w.bin": b"\1" * 50})
    with storage.restore_path("short") as short:
        storage._put_file(storage._key("c", "w.bin"), short / "w.bin")
    with (
        pytest.raises(OSError, match=r"w\.bin has 50 bytes, its manifest says 100"),
        storage.restore_path("c"),
    ):
        pass


# atomic completion and the collection of torn uploads ------------------------------------

CHILD = r"""
import json, sys
from pathlib import Path
from pedl.core._checkpoint import CheckpointContext
from pedl.storage import make_storage
from tests.storage.test_storage_contract import checkpoint_storage

class FileRegistry:
    def register_checkpoint(self, storage_id, total_batches, metadata, resources):
        Path(sys.argv[2]).write_text(json.dumps([storage_id, total_batches]))

storage = make_storage(checkpoint_storage(json.loads(sys.argv[1])))
context = CheckpointContext(storage, FileRegistry())
with context.store_path({"steps_completed": 7}) as (path, storage_id):
    print(storage_id, flush=True)
    for i in range(10):
        (path / f"f{i:03d}.bin").write_bytes(bytes([i]) * 4096)
    if sys.argv[3] == "hang":  # a crash inside the block, before the upload
        print("written", flush=True)
        sys.stdin.read()
"""


class UploadKiller:
    """A proxy :data:`~tests.faults.proxy.Inspector` that SIGKILLs ``pid`` when an upload of a
    second distinct file of one checkpoint goes out: its first file is stored, the rest and
    its manifest are not. S3 and Azure name the object in the request line, GCS in the body."""

    _file = re.compile(rb"([0-9a-f]{8}-[0-9a-f-]{27})(?:/|%2F)(f\d{3}\.bin)")

    def __init__(self) -> None:
        self.pid: int | None = None
        self.seen: set[bytes] = set()
        self.killed = False
        self._lock = threading.Lock()

    def __call__(self, window: bytes) -> bool:
        with self._lock:
            for match in self._file.finditer(window):
                self.seen.add(match.group(2))
                if len(self.seen) == 2 and self.pid is not None and not self.killed:
                    os.kill(self.pid, signal.SIGKILL)
                    self.killed = True
            return self.killed


def start_child(
    section: dict[str, Any], registered: Path, mode: str, env: dict[str, str]
) -> subprocess.Popen[str]:
    return subprocess.Popen(
        [sys.executable, "-c", CHILD, json.dumps(section), str(registered), mode],
        cwd=Path(__file__).resolve().parents[2],
        env={**os.environ, **env},
        stdin=subprocess.PIPE,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
    )


def test_a_sigkilled_upload_registers_nothing_and_gc_removes_what_it_left(
    backend: Backend, tmp_path: Path
) -> None:
    storage = backend.storage
    with storage.store_path("finished") as path:  # a real checkpoint the GC must keep
        write(path, FILES)
    registered = tmp_path / "registered.json"
    if backend.through is None:
        # A local store: the process dies inside the block, its files written.
        child = start_child(backend.section, registered, "hang", {})
        assert child.stdout is not None
        storage_id = child.stdout.readline().strip()
        assert child.stdout.readline().strip() == "written", child.stderr
        child.kill()
        child.communicate(timeout=scaled(30))
    else:
        killer = UploadKiller()
        with Proxy(_server_port(backend), inspect=killer) as proxy:
            section, env = backend.through(proxy.url)
            child = start_child(section, registered, "upload", env)
            killer.pid = child.pid
            out, err = child.communicate(timeout=scaled(60))
        assert child.returncode == -signal.SIGKILL, f"not killed mid-upload:\n{out}\n{err}"
        storage_id = out.strip()
    assert re.fullmatch(r"[0-9a-f-]{36}", storage_id)
    # Never registered, not a checkpoint, but its files are in the store: torn.
    assert not registered.exists()
    assert not storage.exists(storage_id)
    with pytest.raises(FileNotFoundError), storage.restore_path(storage_id):
        pass
    torn = [name for name in backend.objects() if storage_id in name]
    assert torn, backend.objects()
    if backend.through is not None:
        assert torn == [f"{storage_id}/f000.bin"]  # the first file only, no manifest

    # A collection keeps an upload that may still be going on (written just now)...
    assert collect_torn_uploads(storage) == []
    assert [name for name in backend.objects() if storage_id in name] == torn
    # ...and removes it once it has been quiet for the grace period: here, at once.
    assert collect_torn_uploads(storage, older_than=0) == [storage_id]
    assert [name for name in backend.objects() if storage_id in name] == []
    assert storage.exists("finished")
    with storage.restore_path("finished") as path:
        assert read(path) == FILES
    assert collect_torn_uploads(storage, older_than=0) == []
    assert TORN_UPLOAD_GRACE_SECONDS >= 3600


def _server_port(backend: Backend) -> int:
    section = backend.section
    if backend.name == "s3":
        url = section["endpoint_url"]
    elif backend.name == "gcs":
        url = os.environ[EMULATOR_VARIABLE]
    else:
        url = re.search(r"BlobEndpoint=([^;]+)", section["connection_string"]).group(1)  # type: ignore[union-attr]
    port = urlsplit(url).port
    assert port is not None
    return port


# large checkpoints ------------------------------------------------------------------------

LARGE_BYTES = 64 * 1024 * 1024
MEMORY_BOUND = LARGE_BYTES // 2
"""Half the file: boto3's concurrent ranged downloads alone hold ~25 MiB at their peak."""


def test_a_large_checkpoint_is_streamed_with_bounded_memory(storage: StorageManager) -> None:
    """A 64 MiB file goes up and comes down whole while Python never holds half of it at
    once (traced allocations, every thread)."""
    block = os.urandom(1024 * 1024)
    digest = hashlib.sha256()
    tracemalloc.start()
    try:
        with storage.store_path("large") as path, (path / "weights.bin").open("wb") as out:
            for i in range(LARGE_BYTES // len(block)):
                chunk = block[i:] + block[:i]
                out.write(chunk)
                digest.update(chunk)
        _, stored_peak = tracemalloc.get_traced_memory()
        tracemalloc.reset_peak()
        with storage.restore_path("large") as path:
            _, restored_peak = tracemalloc.get_traced_memory()
            got = hashlib.sha256()
            with (path / "weights.bin").open("rb") as stream:
                while data := stream.read(1024 * 1024):
                    got.update(data)
    finally:
        tracemalloc.stop()
    assert got.hexdigest() == digest.hexdigest()
    assert stored_peak < MEMORY_BOUND, f"upload held {stored_peak / 2**20:.1f} MiB"
    assert restored_peak < MEMORY_BOUND, f"download held {restored_peak / 2**20:.1f} MiB"


# credentials ------------------------------------------------------------------------------


def test_credentials_are_never_logged_shown_or_returned(
    backend: Backend, caplog: pytest.LogCaptureFixture
) -> None:
    if not backend.secrets:
        pytest.skip(f"a {backend.name} config carries no credentials")
    caplog.set_level(logging.INFO)
    storage = backend.storage
    shown: list[str] = [repr(storage), str(storage), storage.location("c")]
    with storage.store_path("c") as path:
        write(path, FILES)
    with storage.restore_path("c"):
        pass
    with pytest.raises(FileNotFoundError) as failure, storage.restore_path("missing"):
        pass
    shown.append(str(failure.value))
    storage.delete("c")
    collect_torn_uploads(storage, older_than=0)
    masked = mask_config(
        {
            "checkpoint_storage": backend.section,
            "environment": {
                "environment_variables": [f"AZURE_STORAGE_CONNECTION_STRING={backend.secrets[-1]}"]
            },
        }
    )
    shown.append(json.dumps(masked))
    shown.extend(record.getMessage() for record in caplog.records)
    for secret in backend.secrets:
        for text in shown:
            assert secret not in text


def test_a_gcs_or_azure_config_is_refused_without_its_client(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    from pedl.storage import UnsupportedStorageError, storage_unavailable_reason

    gcs = checkpoint_storage({"type": "gcs", "bucket": "b"})
    azure = checkpoint_storage(
        {"type": "azure", "container": "c", "account_url": "https://a.blob.core.windows.net"}
    )
    assert storage_unavailable_reason(gcs) is None
    assert storage_unavailable_reason(azure) is None
    monkeypatch.setitem(sys.modules, "google.cloud.storage", None)
    monkeypatch.setitem(sys.modules, "azure.storage.blob", None)
    for config, extra in ((gcs, "gcs"), (azure, "azure")):
        reason = storage_unavailable_reason(config)
        assert reason is not None and f"pip install 'pedl[{extra}]'" in reason
        with pytest.raises(UnsupportedStorageError, match=rf"pedl\[{extra}\]"):
            make_storage(config)


def test_an_azure_config_names_exactly_one_way_to_the_account() -> None:
    from pedl.config import ConfigError

    for section in (
        {"type": "azure", "container": "c"},
        {"type": "azure", "container": "c", "connection_string": "x", "account_url": "y"},
    ):
        with pytest.raises(ConfigError, match="exactly one of connection_string or account_url"):
            checkpoint_storage(section)
