"""Checkpoints in a Google Cloud Storage bucket (Determined's ``gcs`` storage).

The layout and the manifest written last are :mod:`pedl.storage._object_store`'s. The
client is google-cloud-storage, an optional dependency (``pip install 'pedl[gcs]'``),
imported when a :class:`GCSStorage` is made. Credentials are Google's Application Default
Credentials; with ``STORAGE_EMULATOR_HOST`` set (an emulator's address) the client talks to
that emulator, anonymously.
"""

from __future__ import annotations

import contextlib
import importlib
import importlib.util
import os
import threading
import warnings
from collections.abc import Iterator
from datetime import datetime
from pathlib import Path
from typing import Any

from pedl.storage._base import UnsupportedStorageError
from pedl.storage._object_store import ObjectStorage

MISSING_GCS = (
    "checkpoint_storage.type 'gcs' needs google-cloud-storage, which is not installed: "
    "pip install 'pedl[gcs]'"
)
EMULATOR_VARIABLE = "STORAGE_EMULATOR_HOST"
CHUNK_BYTES = 8 * 1024 * 1024
"""The most of a file held in memory at once by an upload (a multiple of 256 KiB, as
resumable uploads need); larger files go up in chunks of this size."""


def gcs_unavailable_reason() -> str | None:
    """Why GCS storage cannot be used here (google-cloud-storage is missing), or ``None``;
    looks for the package without importing it."""
    try:
        found = importlib.util.find_spec("google.cloud.storage") is not None
    except ModuleNotFoundError:
        found = False
    return None if found else MISSING_GCS


class GCSStorage(ObjectStorage):
    """Checkpoints as objects under ``gs://<bucket>/<prefix>/``; one client per process and
    emulator address, shared by every thread."""

    def __init__(self, bucket: str, prefix: str | None = None) -> None:
        if gcs_unavailable_reason() is not None:
            raise UnsupportedStorageError(MISSING_GCS)
        super().__init__("gs", bucket, prefix)
        self.bucket = bucket
        self._handle: Any = None  # the client's bucket, made on first use
        self._not_found: type[Exception] = import_gcs("google.api_core.exceptions").NotFound

    @property
    def _bucket(self) -> Any:
        """The bucket through the process's client, made on first use: finding Google's
        credentials may ask the metadata server, which a storage made only to name a location
        (or by a master that never touches this bucket) should not wait for."""
        if self._handle is None:
            self._handle = _client(os.environ.get(EMULATOR_VARIABLE) or None).bucket(self.bucket)
        return self._handle

    def _blob(self, key: str) -> Any:
        """A handle on object ``key``, for downloads: without a chunk size a download is
        one request whose body is streamed to its file a few KiB at a time."""
        return self._bucket.blob(key)

    def _put_file(self, key: str, path: Path) -> None:
        blob = self._bucket.blob(key)
        blob.chunk_size = CHUNK_BYTES  # a file larger than this goes up in chunks of it
        blob.upload_from_filename(str(path))

    def _put_bytes(self, key: str, data: bytes) -> None:
        self._blob(key).upload_from_string(data, content_type="application/json")

    def _get_bytes(self, key: str) -> bytes:
        try:
            data: bytes = self._blob(key).download_as_bytes()
        except self._not_found as err:
            raise FileNotFoundError(key) from err
        return data

    def _get_file(self, key: str, path: Path) -> None:
        try:
            self._blob(key).download_to_filename(str(path))
        except self._not_found as err:
            path.unlink(missing_ok=True)
            raise FileNotFoundError(key) from err

    def _list(self, prefix: str) -> Iterator[tuple[str, datetime]]:
        for blob in self._bucket.client.list_blobs(self.bucket, prefix=prefix):
            yield blob.name, blob.updated

    def _delete_keys(self, keys: list[str]) -> None:
        for key in keys:
            with contextlib.suppress(self._not_found):
                self._bucket.blob(key).delete()

    def _has(self, key: str) -> bool:
        return bool(self._bucket.blob(key).exists())


def import_gcs(module: str = "google.cloud.storage") -> Any:
    """A module of Google's client (``google.cloud.storage`` unless named). google-api-core
    warns on import that grpcio-status is missing wherever grpcio is installed (TensorFlow
    brings it): GCS storage speaks JSON over HTTP, no gRPC, so that warning is silenced."""
    with warnings.catch_warnings():
        warnings.filterwarnings("ignore", "Please install grpcio-status", ImportWarning)
        return importlib.import_module(module)


_clients: dict[str | None, Any] = {}
_clients_lock = threading.Lock()


def _client(emulator: str | None) -> Any:
    """The storage client, made once per process (and emulator address)."""
    with _clients_lock:
        client = _clients.get(emulator)
        if client is None:
            storage = import_gcs()
            if emulator is not None:
                credentials = importlib.import_module("google.auth.credentials")
                client = storage.Client(
                    project="pedl-emulator", credentials=credentials.AnonymousCredentials()
                )
            else:
                client = storage.Client()
            _clients[emulator] = client
        return client
