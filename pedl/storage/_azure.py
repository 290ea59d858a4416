"""Checkpoints in an Azure Blob Storage container (Determined's ``azure`` storage).

The layout and the manifest written last are :mod:`pedl.storage._object_store`'s. The
client is azure-storage-blob, an optional dependency (``pip install 'pedl[azure]'``),
imported when an :class:`AzureStorage` is made. The account is reached through a
``connection_string`` (whose ``BlobEndpoint`` may name an emulator such as Azurite) or an
``account_url`` with a ``credential`` (an account key or SAS token; without one, Azure's
default credential chain from azure-identity). Neither secret is kept on the object in a
form that its ``repr`` or a message shows.
"""

from __future__ import annotations

import contextlib
import importlib
import importlib.util
import threading
from collections.abc import Iterator
from datetime import datetime
from pathlib import Path
from typing import Any

from pedl.storage._base import UnsupportedStorageError
from pedl.storage._object_store import ObjectStorage

MISSING_AZURE = (
    "checkpoint_storage.type 'azure' needs azure-storage-blob, which is not installed: "
    "pip install 'pedl[azure]'"
)
CHUNK_BYTES = 4 * 1024 * 1024
"""The most of a file an upload holds in memory at once: a larger one goes up in blocks of
this size."""
GET_CHUNK_BYTES = 1024 * 1024
"""The ranges a download fetches a blob in: the client holds several copies of a range while
it reads one (a 4 MiB range took 36 MiB), so they are smaller than the blocks."""


def azure_unavailable_reason() -> str | None:
    """Why Azure storage cannot be used here (azure-storage-blob is missing), or ``None``."""
    try:
        found = importlib.util.find_spec("azure.storage.blob") is not None
    except ModuleNotFoundError:
        found = False
    return None if found else MISSING_AZURE


class AzureStorage(ObjectStorage):
    """Checkpoints as blobs under ``<container>/<prefix>/`` of one storage account."""

    def __init__(
        self,
        container: str,
        prefix: str | None = None,
        *,
        connection_string: str | None = None,
        account_url: str | None = None,
        credential: str | None = None,
    ) -> None:
        if azure_unavailable_reason() is not None:
            raise UnsupportedStorageError(MISSING_AZURE)
        if (connection_string is None) == (account_url is None):
            raise ValueError("exactly one of connection_string or account_url must be given")
        super().__init__("az", container, prefix)
        self.container = container
        self._container = _container_client(container, connection_string, account_url, credential)
        self._not_found: type[Exception] = importlib.import_module(
            "azure.core.exceptions"
        ).ResourceNotFoundError

    def __repr__(self) -> str:
        return f"AzureStorage(container={self.container!r}, prefix={self.prefix!r})"

    def _url(self, key: str) -> str:
        """Where ``key`` is, for people: the container's URL without its query (where a SAS
        token given in ``account_url`` would be)."""
        return f"{self._container.url.split('?', 1)[0]}/{key}"

    def _put_file(self, key: str, path: Path) -> None:
        with path.open("rb") as stream:
            self._container.upload_blob(
                key, stream, length=path.stat().st_size, overwrite=True, max_concurrency=1
            )

    def _put_bytes(self, key: str, data: bytes) -> None:
        self._container.upload_blob(key, data, overwrite=True)

    def _get_bytes(self, key: str) -> bytes:
        try:
            data: bytes = self._container.download_blob(key).readall()
        except self._not_found as err:
            raise FileNotFoundError(key) from err
        return data

    def _get_file(self, key: str, path: Path) -> None:
        try:
            downloader = self._container.download_blob(key, max_concurrency=1)
            with path.open("wb") as out:
                downloader.readinto(out)
        except self._not_found as err:
            path.unlink(missing_ok=True)
            raise FileNotFoundError(key) from err

    def _list(self, prefix: str) -> Iterator[tuple[str, datetime]]:
        for blob in self._container.list_blobs(name_starts_with=prefix):
            yield blob.name, blob.last_modified

    def _delete_keys(self, keys: list[str]) -> None:
        for key in keys:
            with contextlib.suppress(self._not_found):
                self._container.delete_blob(key)

    def _has(self, key: str) -> bool:
        return bool(self._container.get_blob_client(key).exists())


_clients: dict[tuple[str, str | None, str | None, str | None], Any] = {}
_clients_lock = threading.Lock()


def _container_client(
    container: str, connection_string: str | None, account_url: str | None, credential: str | None
) -> Any:
    """The container's client, made once per process and account, its transfers in blocks of
    :data:`CHUNK_BYTES` and ranges of :data:`GET_CHUNK_BYTES`."""
    key = (container, connection_string, account_url, credential)
    with _clients_lock:
        client = _clients.get(key)
        if client is None:
            blob = importlib.import_module("azure.storage.blob")
            sizes = {
                "max_single_put_size": CHUNK_BYTES,
                "max_block_size": CHUNK_BYTES,
                "max_single_get_size": GET_CHUNK_BYTES,
                "max_chunk_get_size": GET_CHUNK_BYTES,
            }
            if connection_string is not None:
                service = blob.BlobServiceClient.from_connection_string(
                    connection_string, credential=credential, **sizes
                )
            else:
                assert account_url is not None
                chosen: Any = credential
                if credential is None and "sig=" not in account_url:  # no SAS token in it
                    chosen = _default_credential()
                service = blob.BlobServiceClient(account_url, credential=chosen, **sizes)
            client = service.get_container_client(container)
            _clients[key] = client
        return client


def _default_credential() -> Any:
    """azure-identity's DefaultAzureCredential, for an ``account_url`` given no credential."""
    if importlib.util.find_spec("azure.identity") is None:
        raise UnsupportedStorageError(
            "checkpoint_storage.type 'azure' with account_url and no credential uses Azure's "
            "default credential, which needs azure-identity: pip install azure-identity (or "
            "give credential: an account key or SAS token)"
        )
    return importlib.import_module("azure.identity").DefaultAzureCredential()
